#include "train/train_plan.h"

#include <algorithm>
#include <cmath>

#include <numeric>

#include "data/dataset_mixture.h"
#include "data/holdout.h"
#include "train/objective.h"
#include "train/objectives.h"
#include "train/rollout_geometry.h"
#include "util/errors.h"
#include "util/log.h"

namespace st {

ReferenceMode resolve_reference(const TrainConfig& config, const PairDataset& train, const PairDataset* val) {
  const ReferenceChoice choice = config.dpo.reference;
  if (!objective_for(config.train.stage).needs_reference(config)) return ReferenceMode::none;
  const bool data_has = train.has_ref_logps() && (val == nullptr || val->has_ref_logps());
  if (choice == ReferenceChoice::online) return ReferenceMode::online;
  // QLoRA's reference is its quantized base (adapters off); precomputed log-probs are the
  // full-precision model's.
  if (config.train.method == TrainMethod::qlora) {
    if (choice == ReferenceChoice::precomputed) {
      throw ConfigError("dpo.reference = precomputed with train.method = qlora: precomputed log-probs come from the "
                        "full-precision base, but QLoRA's reference is the quantized base with the adapters off; set "
                        "dpo.reference = online (or auto)");
    }
    return ReferenceMode::online;
  }
  for (const PairDataset* data : {&train, val}) {
    for (size_t k = 0; data && data->has_ref_logps() && k < data->components(); ++k) {
      const auto& info = data->component_manifest(k).reference;
      if (info && info->cutoff_len != config.data.cutoff_len) {
        throw ConfigError(data->component_directory(k) + ": its reference log-probs were computed with cutoff_len " +
                          std::to_string(info->cutoff_len) + " but data.cutoff_len = " +
                          std::to_string(config.data.cutoff_len) + "; rerun `shardtune precompute-ref` with this "
                          "config, or set dpo.reference = online");
      }
      if (info && info->partner_group > 0 && info->partner_group != config.train.micro_batch) {
        throw ConfigError(data->component_directory(k) + ": its reference log-probs pair each example with a "
                          "mismatched partner in groups of " + std::to_string(info->partner_group) + " (train.micro_batch at "
                          "precompute-ref) but train.micro_batch = " + std::to_string(config.train.micro_batch) +
                          "; rerun `shardtune precompute-ref` with this config, or set dpo.reference = online");
      }
    }
  }
  if (choice != ReferenceChoice::precomputed) return data_has ? ReferenceMode::precomputed : ReferenceMode::online;
  if (!data_has) {
    const std::string missing = train.has_ref_logps() ? val->directory() : train.directory();
    throw ConfigError("dpo.reference = precomputed, but " + missing +
                      " has no ref_chosen_logp/ref_rejected_logp; run `shardtune precompute-ref --config "
                      "<this config>` first, or set dpo.reference = online");
  }
  return ReferenceMode::precomputed;
}

void check_reference_provenance(const TrainData& data, const std::string& fingerprint, const std::string& model,
                                const std::string& dtype) {
  const std::string fix = "; rerun `shardtune precompute-ref` with this config, or set dpo.reference = online";
  for (const PairDataset* dataset : {data.train.get(), data.val.get()}) {
    for (size_t k = 0; dataset && k < dataset->components(); ++k) {
      const auto& info = dataset->component_manifest(k).reference;
      if (!info) continue;
      const std::string where = dataset->component_directory(k) + "/manifest.json: reference.";
      if (info->fingerprint.empty()) {
        log0("train: warning: ", where, "fingerprint is missing (written by an older shardtune); cannot check that "
             "its reference log-probs come from ", model);
      } else if (info->fingerprint != fingerprint) {
        throw ConfigError(where + "fingerprint: its reference log-probs were computed with " + info->model + " (" +
                          info->fingerprint + "), not with this run's model " + model + " (" + fingerprint + ")" + fix);
      }
      if (info->dtype != dtype) {
        throw ConfigError(where + "dtype: its reference log-probs were computed in " + info->dtype +
                          ", this run computes in " + dtype + fix);
      }
    }
  }
}

uint64_t TrainData::val_pairs() const {
  if (!val) return 0;
  return val_subset ? val_subset->size() : val->size();
}

TrainData open_train_data(const TrainConfig& config, int64_t model_vocab_size) {
  const DatasetExpectations expect{objective_for(config.train.stage).example_kind(), model_vocab_size,
                                   config.data.verify_checksums};
  if (config.data.train.empty()) {
    throw ConfigError("data.train is empty; point it at a directory made by `shardtune prep` or `shardtune synth`");
  }
  TrainData data;
  std::vector<std::string> directories;
  for (const MixtureEntry& entry : parse_mixture(config.data.train, "data.train")) {
    directories.push_back(entry.directory);
    data.train_weights.push_back(entry.weight);
  }
  data.train = std::make_shared<PairDataset>(directories, expect);
  for (size_t k = 0; k < data.train->components(); ++k) {
    const int64_t prepped = data.train->component_manifest(k).cutoff_len;
    if (prepped > 0 && prepped < config.data.cutoff_len) {
      log0("train: ", directories[k], " was prepped with cutoff_len ", prepped, ", so its rows hold at most ", prepped,
           " tokens though data.cutoff_len = ", config.data.cutoff_len, "; prep it again with --cutoff-len ",
           config.data.cutoff_len, " to train longer rows");
    }
  }
  const auto indices = [](uint64_t begin, uint64_t count) {
    std::vector<uint64_t> out(count);
    std::iota(out.begin(), out.end(), begin);
    return std::make_shared<const std::vector<uint64_t>>(std::move(out));
  };
  if (!config.data.val.empty()) {
    std::vector<std::string> val_directories;
    for (const MixtureEntry& entry : parse_mixture(config.data.val, "data.val")) {
      val_directories.push_back(entry.directory);
    }
    data.val = std::make_shared<PairDataset>(val_directories, expect);
    for (size_t k = 0; k < data.val->components(); ++k) {
      data.val_names.push_back(val_directories[k]);
      data.val_parts.push_back(indices(data.val->component_begin(k), data.val->component_size(k)));
    }
  } else if (config.data.val_size > 0.0) {
    // Each dataset holds out its own share (one dataset: the split of data/holdout.h as is).
    std::vector<uint64_t> train_indices, val_indices;
    for (size_t k = 0; k < data.train->components(); ++k) {
      const uint64_t begin = data.train->component_begin(k);
      IndexSplit split = hold_out(data.train->component_size(k), config.data.val_size, config.train.seed);
      for (uint64_t& index : split.train) index += begin;
      for (uint64_t& index : split.val) index += begin;
      train_indices.insert(train_indices.end(), split.train.begin(), split.train.end());
      val_indices.insert(val_indices.end(), split.val.begin(), split.val.end());
      data.train_sizes.push_back(split.train.size());
      data.val_names.push_back(directories[k]);
      data.val_parts.push_back(std::make_shared<const std::vector<uint64_t>>(std::move(split.val)));
    }
    data.val = data.train;
    data.train_subset = std::make_shared<const std::vector<uint64_t>>(std::move(train_indices));
    data.val_subset = std::make_shared<const std::vector<uint64_t>>(std::move(val_indices));
  }
  if (data.train_sizes.empty()) {
    for (size_t k = 0; k < data.train->components(); ++k) data.train_sizes.push_back(data.train->component_size(k));
  }
  return data;
}

std::string batch_geometries(int64_t global_batch, int64_t micro_batch, int world_size, int context_size) {
  const auto listed = [](const std::vector<int64_t>& values) {
    std::string text;
    for (const int64_t value : values) text += (text.empty() ? "" : ", ") + std::to_string(value);
    return text.empty() ? std::string("none") : text;
  };
  std::vector<int64_t> ranks, micro_batches;
  for (int64_t n = 1; n * micro_batch <= global_batch; ++n) {
    if (global_batch % (n * micro_batch) == 0) ranks.push_back(n * context_size);
  }
  for (int64_t m = 1; m * world_size <= global_batch; ++m) {
    if (global_batch % (m * world_size) == 0) micro_batches.push_back(m);
  }
  return "rank counts that keep it with train.micro_batch = " + std::to_string(micro_batch) + ": " + listed(ranks) +
         "; train.micro_batch values that keep it on " + std::to_string(world_size * context_size) +
         " ranks: " + listed(micro_batches);
}

BatchGeometry resolve_batch_geometry(const TrainConfig& config, int world_size, int64_t resumed_global_batch,
                                     int context_size) {
  const TrainOptions& t = config.train;
  BatchGeometry out;
  const int64_t per_micro_step = t.micro_batch * world_size;
  // A resumed run keeps its checkpoint's global batch whatever the rank count: train.grad_accum
  // (given or auto) is derived from it, unless train.global_batch fixes another (refused on resume).
  if (t.global_batch > 0) {
    out.global_batch = t.global_batch;
  } else if (resumed_global_batch > 0) {
    out.global_batch = resumed_global_batch;
  } else {
    out.global_batch = per_micro_step * std::max<int64_t>(t.grad_accum, 1);
  }
  const std::string whose = resumed_global_batch > 0 && t.global_batch == 0 ? "checkpoint's " : "";
  if (out.global_batch % per_micro_step != 0) {
    throw ConfigError("train: the " + whose + "global batch of " + std::to_string(out.global_batch) +
                      " pairs is not a multiple of train.micro_batch(" + std::to_string(t.micro_batch) + ") x " +
                      (context_size > 1 ? "data-parallel " : "") + "ranks(" + std::to_string(world_size) +
                      "), so no whole train.grad_accum keeps it; " +
                      batch_geometries(out.global_batch, t.micro_batch, world_size, context_size));
  }
  out.grad_accum = out.global_batch / per_micro_step;
  if (config.optim.step_in_backward && out.grad_accum != 1) {
    throw ConfigError("optim.step_in_backward = true needs train.grad_accum = 1, and the " + whose + "global batch of " +
                      std::to_string(out.global_batch) + " pairs on " + std::to_string(world_size) + " ranks takes " +
                      std::to_string(out.grad_accum) + " micro-steps; " +
                      batch_geometries(out.global_batch, t.micro_batch, world_size, context_size));
  }
  return out;
}

TrainPlan plan_training(const TrainConfig& config, const TrainData& data, int world_size, bool on_gpu,
                        int64_t resumed_global_batch, int context_size) {
  const TrainOptions& t = config.train;
  check_objective_config(config);
  TrainPlan plan;
  const BatchGeometry geometry = resolve_batch_geometry(config, world_size, resumed_global_batch, context_size);
  plan.global_batch = geometry.global_batch;
  plan.grad_accum = geometry.grad_accum;
  plan.train_pairs = data.train_pairs();
  plan.val_pairs = data.val_pairs();
  const auto batch = static_cast<uint64_t>(plan.global_batch);
  plan.steps_per_epoch = static_cast<int64_t>((plan.train_pairs + batch - 1) / batch);
  if (objective_for(t.stage).online()) {  // its batches are completions of the prompts' generations
    plan.steps_per_epoch = rollout_steps_per_epoch(
        rollout_geometry(*objective_for(t.stage).rollout_options(config), t.micro_batch, plan.grad_accum, world_size, 0),
        plan.train_pairs);
  }
  plan.total_steps = t.max_steps > 0 ? t.max_steps
                                     : static_cast<int64_t>(std::ceil(t.epochs * static_cast<double>(plan.steps_per_epoch)));
  plan.reference = resolve_reference(config, *data.train, data.val.get());
  plan.compute_dtype = resolve_compute_dtype(t.dtype, on_gpu);
  return plan;
}

CollateOptions collate_options(const TrainConfig& config, int64_t pad_id) {
  CollateOptions options;
  options.cutoff_len = config.data.cutoff_len;
  options.pad_id = pad_id;
  options.micro_batch = config.train.micro_batch;
  options.max_tokens = config.data.micro_batch_tokens;
  options.group_by_length = config.data.group_by_length;
  options.packing = config.data.packing;
  options.share_prompt = config.dpo.share_prompt;
  return options;
}

int64_t longest_segment_tokens(Stage stage, const DataOptions& data, bool share_prompt) {
  // A shared prompt's row holds every completion of the example.
  return objective_for(stage).shares_prompts(share_prompt) ? 2 * data.cutoff_len : data.cutoff_len;
}

MicroBatchShape largest_micro_batch(Stage stage, int64_t micro_batch, const DataOptions& data, bool share_prompt,
                                    AttentionPath attention) {
  const Objective& objective = objective_for(stage);
  const bool shared = objective.shares_prompts(share_prompt);
  const int64_t sequences = micro_batch * objective.sequences_per_example();
  const int64_t segment = longest_segment_tokens(stage, data, share_prompt);
  MicroBatchShape shape;
  shape.masked = (data.packing || shared) && attention == AttentionPath::masked;
  if (data.micro_batch_tokens > 0) {
    shape.rows = 1;
    shape.row_tokens = data.packing ? std::max(data.micro_batch_tokens, segment) : data.micro_batch_tokens;
  } else {
    // Packed rows of sequences longer than half a row hold one each: as many rows as unpacked.
    shape.rows = shared ? micro_batch : sequences;
    shape.row_tokens = segment;
  }
  return shape;
}

MicroBatchShape largest_micro_batch(const TrainConfig& config) {
  return largest_micro_batch(config.train.stage, config.train.micro_batch, config.data, config.dpo.share_prompt,
                             config.model.attention);
}

AdapterShape adapter_shape(const TrainConfig& config) {
  if (!trains_adapters(config.train.method)) return {};
  return {config.lora.r, lora_targets(config.lora.target_modules), config.train.method == TrainMethod::qlora,
          config.lora.double_quant, config.lora.host_embedding};
}

void set_micro_batch(EstimateInputs& inputs, const MicroBatchShape& shape) {
  inputs.micro_batch_rows = shape.rows;
  inputs.seq_len = shape.row_tokens;
  inputs.masked_attention = shape.masked;
}

ComputeDtype resolve_compute_dtype(ComputeDtype dtype, bool on_gpu) {
  if (dtype == ComputeDtype::fp16 && !on_gpu) {
    throw ConfigError("train.dtype = fp16 runs on GPUs only (libtorch has no half-precision matrix products on the "
                      "CPU); on CPUs use fp32 or bf16 (LlamaFactory: --fp16 False, or --bf16 True)");
  }
  if (dtype != ComputeDtype::automatic) return dtype;
  return on_gpu ? ComputeDtype::bf16 : ComputeDtype::fp32;
}

at::ScalarType compute_scalar_type(ComputeDtype dtype) {
  switch (dtype) {
    case ComputeDtype::bf16: return at::kBFloat16;
    case ComputeDtype::fp16: return at::kHalf;
    case ComputeDtype::fp32:
    case ComputeDtype::automatic: break;
  }
  return at::kFloat;
}

std::string describe_objective(const TrainConfig& config, ReferenceMode reference) {
  return objective_for(config.train.stage).describe(config, enum_name(reference));
}

}  // namespace st

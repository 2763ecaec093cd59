#include "train/objective.h"

#include <ATen/ATen.h>

#include <stdexcept>

#include "util/errors.h"
#include "util/host_sync.h"

namespace st {

MicroBatchResult Objective::micro_batch_loss(const MicroBatch& batch, const at::Tensor& policy,
                                             const at::Tensor& reference, const ObjectiveSections& sections,
                                             double step_pairs_per_micro_batch) const {
  MicroBatchResult result;
  const bool padding = batch.pairs == 0;
  const auto sums_options = at::TensorOptions(at::kDouble).device(policy.device());
  std::vector<at::Tensor> outputs(kOutputSums, at::zeros({}, sums_options));
  const at::Tensor tokens = to_device_async(batch.target_counts.to(at::kFloat), policy.device());
  const double micro_batch_weight = step_pairs_per_micro_batch > 0.0 && !padding
                                        ? step_pairs_per_micro_batch / static_cast<double>(batch.pairs)
                                        : 1.0;
  result.summed_loss =
      summed_loss(batch, policy, reference, tokens, sections, micro_batch_weight, padding ? nullptr : &outputs);
  if (padding) {
    result.summed_loss = result.summed_loss * 0.0;  // keeps the graph: the backward must still run
    result.output_sums = at::zeros({static_cast<int64_t>(kOutputSums)}, sums_options);
    return result;
  }
  outputs[output_slot(&LossSums::loss)] = result.summed_loss.detach().sum().to(at::kDouble);
  // Entries past the output sums are the micro-batch metrics (micro_metric_columns' order).
  if (outputs.size() > kOutputSums) {
    result.micro_metrics = at::stack(std::vector<at::Tensor>(outputs.begin() + kOutputSums, outputs.end()));
    outputs.resize(kOutputSums);
  }
  result.output_sums = at::stack(outputs);
  result.counts.pairs = static_cast<double>(batch.pairs);
  result.counts.target_tokens = static_cast<double>(batch.target_tokens);
  result.counts.real_tokens = static_cast<double>(batch.real_tokens);
  result.counts.computed_tokens = static_cast<double>(batch.computed_tokens);
  result.counts.padded_tokens = static_cast<double>(batch.padded_tokens);
  result.counts.micro_batches = 1.0;
  if (batch.labels.defined()) result.counts.positive_labels = static_cast<double>(batch.labels.sum().item<int64_t>());
  return result;
}

void Objective::add_derived_metrics(const LossSums&, const std::string&, nlohmann::ordered_json&) const {}
void Objective::add_micro_batch_metrics(const std::vector<std::vector<double>>&, const ObjectiveSections&,
                                        nlohmann::ordered_json&) const {}

void check_objective_config(const TrainConfig& config) {
  const TrainOptions& t = config.train;
  const Objective& objective = objective_for(t.stage);
  if (t.micro_batch < objective.min_micro_batch()) {
    throw ConfigError("train.micro_batch = " + std::to_string(t.micro_batch) + " must be at least " +
                      std::to_string(objective.min_micro_batch()) + " for train.stage = " + enum_name(t.stage) + " (" +
                      objective.why_min_micro_batch() + ")");
  }
  objective.check_config(config);
}

GroupAdvantages Objective::generation_advantages(const RewardTable&, const std::vector<double>&,
                                                const std::vector<double>&, const ObjectiveSections&) const {
  throw std::logic_error(std::string("train.stage = ") + enum_name(stage()) + " makes no generations");
}

void Objective::check_online_batches(const TrainConfig& config) const {
  // Its micro-batches are train.micro_batch completions in the generation's order, one per row.
  const auto refuse = [&](const std::string& setting, const char* why) {
    throw ConfigError(setting + " with train.stage = " + enum_name(stage()) + ": " + why);
  };
  if (config.data.packing) refuse("data.packing = true", "its completions are one per row; set data.packing = false");
  if (config.data.micro_batch_tokens != 0) {
    refuse("data.micro_batch_tokens = " + std::to_string(config.data.micro_batch_tokens),
           "its micro-batches are train.micro_batch completions; set data.micro_batch_tokens = 0");
  }
  if (config.data.group_by_length) {
    refuse("data.group_by_length = true", "its micro-batches keep the generation's order; set it to false");
  }
  if (config.dist.context_parallel != 1) {
    refuse("dist.context_parallel = " + std::to_string(config.dist.context_parallel),
           "its rows are not split over ranks yet; set dist.context_parallel = 1");
  }
  if (!config.data.val.empty() || config.data.val_size > 0.0) {
    refuse("validation data (data.val, data.val_size)", "evaluating generates completions, which is not built yet; "
                                                        "leave data.val empty and data.val_size = 0");
  }
}

ModelConfig trained_model_config(const TrainConfig& config, ModelConfig base, int64_t pad_id) {
  const ModelHead head = objective_for(config.train.stage).model_head();
  if (head == ModelHead::lm && base.head == ModelHead::score) {
    throw ConfigError("model.path " + config.model.path + " holds a reward model (" + hf_architecture(base) +
                      "); train.stage = " + enum_name(config.train.stage) + " trains a causal LM: start from " +
                      "the causal LM, or set train.stage = rm to train the reward model");
  }
  base.head = head;
  if (head == ModelHead::score) base.pad_token_id = pad_id;
  return base;
}

// Each objective's one instance, defined in its own <name>_objective.cpp (its class is private
// to that file: the rest of the code sees only Objective).
const Objective& sft_objective();
const Objective& dpo_objective();
const Objective& kto_objective();
const Objective& rm_objective();
const Objective& grpo_objective();
const Objective& rloo_objective();

const Objective& objective_for(Stage stage) {
  switch (stage) {
    case Stage::sft: return sft_objective();
    case Stage::dpo: return dpo_objective();
    case Stage::kto: return kto_objective();
    case Stage::rm: return rm_objective();
    case Stage::grpo: return grpo_objective();
    case Stage::rloo: return rloo_objective();
  }
  throw ConfigError("train.stage: no objective for this stage");
}

}  // namespace st

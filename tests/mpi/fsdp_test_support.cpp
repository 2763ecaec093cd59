#include "fsdp_test_support.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/optim/adamw.h>

#include <numeric>

#include "data/collate.h"
#include "data/sampler.h"
#include "distributed/mpi_communicator.h"
#include "hf/model_weights.h"
#include "hf/param_table.h"
#include "model/llama_units.h"
#include "model/token_logp.h"
#include "mpi_test_main.h"
#include "prep/synth.h"

namespace st::testing {

std::vector<Pair> global_pairs(size_t count, uint64_t seed) {
  SynthOptions synth;
  synth.max_length = 30;
  synth.seed = seed;
  const PairTable table = synthesize_pairs(synth, 0, count);
  std::vector<Pair> pairs;
  for (size_t i = 0; i < table.size(); ++i) pairs.push_back(table.at(i));
  return pairs;
}

std::vector<Pair> rank_share(const std::vector<Pair>& batch, int rank, int size) {
  std::vector<uint64_t> indices(batch.size());
  std::iota(indices.begin(), indices.end(), 0);
  std::vector<Pair> share;
  for (uint64_t i : rank_slice(indices, rank, size)) share.push_back(batch[i]);
  return share;
}

std::vector<Pair> my_share(const std::vector<Pair>& batch) {
  return rank_share(batch, world_communicator().rank(), world_communicator().size());
}

at::Tensor my_rows(const at::Tensor& all_rows, size_t pairs) {
  const MpiCommunicator& world = world_communicator();
  std::vector<uint64_t> indices(pairs);
  std::iota(indices.begin(), indices.end(), 0);
  const std::vector<uint64_t> mine = rank_slice(indices, world.rank(), world.size());
  const auto first = static_cast<int64_t>(mine.front()), count = static_cast<int64_t>(mine.size());
  return at::cat({all_rows.narrow(0, first, count), all_rows.narrow(0, static_cast<int64_t>(pairs) + first, count)});
}

ShardingGroups test_groups(Sharding strategy) {
  const int rank = test_world().rank(), size = test_world().size();
  const int ranks_per_node = size % 2 == 0 ? size / 2 : size;
  return make_sharding_groups(test_world().comm(), strategy, declared_topology(rank, size, ranks_per_node),
                              [](MPI_Comm comm) -> std::unique_ptr<Communicator> {
                                return std::make_unique<MpiCommunicator>(comm, test_world().watchdog());
                              });
}

at::Tensor pair_loss(const at::Tensor& logps, int64_t pairs) {
  const at::Tensor margin = 0.1 * (logps.narrow(0, 0, pairs) - logps.narrow(0, pairs, pairs));
  return -at::log_sigmoid(margin).mean();
}

at::Tensor whole_model_logps(const TensorMap& whole, const ModelConfig& config, const at::Tensor& input_ids,
                             const at::Tensor& targets) {
  const LlamaWeights weights = llama_weights(whole, config);
  const at::Tensor hidden = llama_final_hidden(weights, config, input_ids);
  return chunked_token_logps(hidden.reshape({-1, hidden.size(2)}), weights.lm_head, targets.reshape({-1}), 64)
      .view(targets.sizes())
      .sum(1);
}

struct ReferenceTrainer::Optimizer {
  std::unique_ptr<torch::optim::AdamW> adamw;
};

ReferenceTrainer::ReferenceTrainer(const ModelConfig& config, uint64_t seed, const OptimOptions& optim,
                                   at::ScalarType dtype)
    : config_(config), optim_(optim), whole_(init_preset_weights(config, seed, dtype)),
      adamw_(std::make_unique<Optimizer>()) {
  std::vector<at::Tensor> decayed, not_decayed;
  for (const auto& spec : all_params(config)) {
    at::Tensor& t = whole_.at(spec.name);
    t.requires_grad_(true);
    (spec.shape.size() >= 2 ? decayed : not_decayed).push_back(t);
  }
  const auto options = [&](double decay) {
    return std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(optim.lr)
                                                            .betas({optim.beta1, optim.beta2})
                                                            .weight_decay(decay)
                                                            .eps(optim.eps));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decayed, options(optim.weight_decay));
  groups.emplace_back(not_decayed, options(0.0));
  adamw_->adamw = std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(optim.lr));
}

ReferenceTrainer::~ReferenceTrainer() = default;

double ReferenceTrainer::step(const std::vector<Pair>& batch, double lr) {
  const MicroBatch all = collate_pairs(batch, PairKind::dpo, {});
  const at::Tensor loss =
      pair_loss(whole_model_logps(whole_, config_, all.input_ids, all.targets), static_cast<int64_t>(batch.size()));
  adamw_->adamw->zero_grad();
  torch::autograd::backward({loss});
  double squares = 0;
  for (auto& [name, t] : whole_) squares += t.grad().to(at::kDouble).pow(2).sum().item<double>();
  grad_norm_ = std::sqrt(squares);
  const double clip = optim_.grad_clip / (grad_norm_ + 1e-6);
  if (optim_.grad_clip > 0 && clip < 1.0) {
    for (auto& [name, t] : whole_) t.mutable_grad().mul_(clip);
  }
  for (auto& group : adamw_->adamw->param_groups()) group.options().set_lr(lr);
  adamw_->adamw->step();
  return loss.item<double>();
}

at::Tensor expected_shard(const UnitLayout& unit, int rank, const std::function<at::Tensor(const ParamSlot&)>& value) {
  std::vector<at::Tensor> parts;
  for (const ParamSlot& slot : unit.params) parts.push_back(value(slot).reshape({-1}));
  // The padding in the values' dtype (float64 for a judge); a unit without parameters is fp32.
  const at::TensorOptions options = parts.empty() ? at::TensorOptions(at::kFloat) : parts.front().options();
  parts.push_back(at::zeros({unit.padded_numel - unit.numel}, options));
  return at::cat(parts).narrow(0, unit.shard_offset(rank), unit.shard_numel);
}

at::Tensor expected_grad_shard(const UnitLayout& unit, int rank, const TensorMap& weights) {
  return expected_shard(unit, rank, [&](const ParamSlot& slot) {
    const at::Tensor& weight = weights.at(slot.spec.name);
    return weight.grad().defined() ? weight.grad() : at::zeros(slot.spec.shape, weight.options());
  });
}

TensorMap whole_adapters(const ModelConfig& config, bool zero_b) {
  TensorMap adapters;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    for (const ParamSpec& spec : lora_layer_params(config, layer, lora_targets(kAdapterTargets), kAdapterRank)) {
      at::Tensor value = init_parameter(spec, kAdapterSeed);
      if (!zero_b && spec.init == ParamSpec::Init::zeros) {
        value = at::empty(spec.shape).normal_(0.0, 0.05,
                                              at::make_generator<at::CPUGeneratorImpl>(kAdapterSeed + layer));
      }
      adapters[spec.name] = value;
    }
  }
  return adapters;
}

const std::vector<Pair>& adapter_test_pairs() {
  static const std::vector<Pair> pairs = global_pairs(8);
  return pairs;
}

at::Tensor dense_logps(const ModelConfig& config, const TensorMap& weights, double scale) {
  const MicroBatch all = collate_pairs(adapter_test_pairs(), PairKind::dpo, {});
  TokenBatch batch =
      make_token_batch(all.input_ids, all.targets, rope_inverse_frequencies(config), at::kFloat, kAdapterChunk);
  batch.adapter.scale = scale;
  return llama_sequence_logps(llama_weights(weights, config), config, batch);
}

at::Tensor engine_logps(FsdpModel& model, bool base_only) {
  const MicroBatch local = collate_pairs(my_share(adapter_test_pairs()), PairKind::dpo, {});
  const TokenBatch batch = model.make_batch(local.input_ids, local.targets);
  return base_only ? model.base_sequence_logps(batch) : model.sequence_logps(batch);
}

}  // namespace st::testing

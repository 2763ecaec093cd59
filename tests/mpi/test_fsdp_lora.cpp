// LoRA on the FSDP engine against single-process autograd on the whole model (base weights
// frozen, A and B leaves): the same log-probs, and each rank's averaged adapter gradient shard
// equals its slice of the dense A and B gradients (fp32, rel 1e-5) for every sharding strategy
// and recompute policy on 1-4 ranks - the same reference for every rank count, so the result does
// not depend on it. Also: fresh adapters (B = 0) leave the base's log-probs exactly, the base
// alone is the reference, dropout masks repeat in a recompute, and the base holds no gradients.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include "data/collate.h"
#include "fsdp/fsdp_model.h"
#include "fsdp/memory_estimate.h"
#include "fsdp/shard_source.h"
#include "fsdp_test_support.h"
#include "hf/model_weights.h"
#include "hf/presets.h"
#include "mpi_test_main.h"

namespace st {
namespace {

using namespace st::testing;

constexpr uint64_t kSeed = 11;
constexpr int64_t kRank = 4;
constexpr double kScale = 2.0;
constexpr int64_t kChunk = 64;

const std::vector<LoraTarget>& test_targets() {
  static const std::vector<LoraTarget> targets = lora_targets("q,v,o,gate,down");
  return targets;
}

// Whole adapters: A from its seeded init, B random (a zero B would leave A without gradient).
TensorMap whole_adapters(const ModelConfig& config, bool zero_b) {
  TensorMap adapters;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    for (const ParamSpec& spec : lora_layer_params(config, layer, test_targets(), kRank)) {
      at::Tensor value = init_parameter(spec, kSeed);
      if (!zero_b && spec.init == ParamSpec::Init::zeros) {
        value = at::empty(spec.shape).normal_(0.0, 0.05, at::make_generator<at::CPUGeneratorImpl>(kSeed + layer));
      }
      adapters[spec.name] = value;
    }
  }
  return adapters;
}

struct LoraRun {
  ModelConfig config = preset_config("debug");
  ShardingGroups groups;
  std::unique_ptr<FsdpModel> model;

  LoraRun(Sharding sharding, const TensorMap& adapters, Recompute policy, double dropout = 0.0)
      : groups(test_groups(sharding)) {
    const int size = groups.shard->size(), rank = groups.shard->rank();
    ModelShards base = init_model_shards(config, kSeed, size, rank);
    const std::vector<UnitLayout> units = build_adapter_unit_layouts(config, test_targets(), kRank, size);
    std::vector<at::Tensor> masters;
    for (const UnitLayout& unit : units) {
      masters.push_back(expected_shard(unit, rank, [&](const ParamSlot& slot) { return adapters.at(slot.spec.name); }));
    }
    FsdpModelOptions options{at::kFloat, at::kFloat, at::kCPU, kChunk};
    options.adapter = {kScale, dropout, 5};
    options.recompute.assign(units.size(), policy);
    model = std::make_unique<FsdpModel>(config, units, groups, std::move(masters), options,
                                        FrozenBase{base.units, base.masters, {}});
  }
};

const std::vector<Pair>& test_pairs() {
  static const std::vector<Pair> pairs = global_pairs(8);
  return pairs;
}

// The whole model's per-row log-probs over every pair (chosen rows, then rejected rows).
at::Tensor dense_logps(const ModelConfig& config, const TensorMap& weights, double scale) {
  const MicroBatch all = collate_pairs(test_pairs(), PairKind::dpo, {});
  TokenBatch batch = make_token_batch(all.input_ids, all.targets, rope_inverse_frequencies(config), at::kFloat, kChunk);
  batch.adapter.scale = scale;
  return llama_sequence_logps(llama_weights(weights, config), config, batch);
}

at::Tensor engine_logps(FsdpModel& model, bool base_only = false) {
  const MicroBatch local = collate_pairs(my_share(test_pairs()), PairKind::dpo, {});
  const TokenBatch batch = model.make_batch(local.input_ids, local.targets);
  return base_only ? model.base_sequence_logps(batch) : model.sequence_logps(batch);
}

struct GradientCase {
  Sharding sharding;
  Recompute policy;
};

class LoraGradients : public ::testing::TestWithParam<GradientCase> {};

TEST_P(LoraGradients, EqualDenseAutogradOnAAndB) {
  const auto [sharding, policy] = GetParam();
  const ModelConfig config = preset_config("debug");
  TensorMap adapters = whole_adapters(config, /*zero_b=*/false);
  TensorMap weights = init_preset_weights(config, kSeed, at::kFloat);
  for (auto& [name, tensor] : adapters) {
    tensor.requires_grad_(true);
    weights[name] = tensor;
  }
  const at::Tensor dense = dense_logps(config, weights, kScale);
  const auto rows = static_cast<double>(dense.size(0));
  torch::autograd::backward({dense.sum() / rows});

  LoraRun run(sharding, adapters, policy);
  const at::Tensor logps = engine_logps(*run.model);
  EXPECT_LT(relative_max_diff(logps, my_rows(dense.detach(), test_pairs().size())), 1e-5);
  torch::autograd::backward({logps.sum() * world_communicator().size() / rows});
  const auto& units = run.model->units();
  for (size_t u = 0; u < units.size(); ++u) {
    const at::Tensor expected = expected_shard(units[u], run.groups.shard->rank(), [&](const ParamSlot& slot) {
      return adapters.at(slot.spec.name).grad();
    });
    if (units[u].params.empty()) {
      EXPECT_EQ(run.model->grad_shards()[u].abs().sum().item<double>(), 0.0) << units[u].name;
      continue;
    }
    EXPECT_LT(relative_max_diff(run.model->grad_shards()[u], expected), 1e-5)
        << units[u].name << " on rank " << world_communicator().rank() << " of " << world_communicator().size();
  }
}

INSTANTIATE_TEST_SUITE_P(StrategiesAndPolicies, LoraGradients,
                         ::testing::Values(GradientCase{Sharding::full, Recompute::full},
                                           GradientCase{Sharding::full, Recompute::selective},
                                           GradientCase{Sharding::full, Recompute::none},
                                           GradientCase{Sharding::grad_op, Recompute::full},
                                           GradientCase{Sharding::none, Recompute::selective},
                                           GradientCase{Sharding::hybrid, Recompute::full}));

TEST(LoraEngine, FreshAdaptersLeaveTheBaseAndTheBaseAloneIsTheReference) {
  const ModelConfig config = preset_config("debug");
  const TensorMap base = init_preset_weights(config, kSeed, at::kFloat);
  const at::Tensor dense_base = my_rows(dense_logps(config, base, 0.0), test_pairs().size());

  LoraRun fresh(Sharding::full, whole_adapters(config, /*zero_b=*/true), Recompute::full);
  const at::NoGradGuard no_grad;
  const at::Tensor policy = engine_logps(*fresh.model);
  EXPECT_TRUE(at::equal(policy, engine_logps(*fresh.model, /*base_only=*/true)));
  EXPECT_LT(relative_max_diff(policy, dense_base), 1e-5);

  LoraRun trained(Sharding::full, whole_adapters(config, /*zero_b=*/false), Recompute::full);
  EXPECT_LT(relative_max_diff(engine_logps(*trained.model, /*base_only=*/true), dense_base), 1e-5);
  EXPECT_GT((engine_logps(*trained.model) - dense_base).abs().max().item<double>(), 1e-4);
}

TEST(LoraEngine, DropoutMasksRepeatInTheRecompute) {
  const ModelConfig config = preset_config("debug");
  const TensorMap adapters = whole_adapters(config, /*zero_b=*/false);
  std::vector<at::Tensor> grads[2];
  at::Tensor logps[2];
  const Recompute policies[2] = {Recompute::full, Recompute::none};  // rerun vs kept graph
  for (int i = 0; i < 2; ++i) {
    LoraRun run(Sharding::full, adapters, policies[i], /*dropout=*/0.3);
    logps[i] = engine_logps(*run.model);
    torch::autograd::backward({logps[i].sum()});
    for (const at::Tensor& grad : run.model->grad_shards()) grads[i].push_back(grad.clone());
  }
  EXPECT_TRUE(at::equal(logps[0], logps[1]));
  for (size_t u = 0; u < grads[0].size(); ++u) EXPECT_LT(relative_max_diff(grads[0][u], grads[1][u]), 1e-6) << u;
  LoraRun without(Sharding::full, adapters, Recompute::full);
  EXPECT_GT((engine_logps(*without.model) - logps[0]).abs().max().item<double>(), 1e-5);  // dropout acted
}

TEST(LoraEngine, OnlyTheAdaptersHaveGradients) {
  const ModelConfig config = preset_config("debug");
  LoraRun run(Sharding::full, whole_adapters(config, false), Recompute::full);
  int64_t adapter_elements = 0, grad_elements = 0;
  for (const UnitLayout& unit : run.model->units()) adapter_elements += unit.shard_numel;
  for (const at::Tensor& grad : run.model->grad_shards()) grad_elements += grad.numel();
  EXPECT_EQ(grad_elements, adapter_elements);
  EXPECT_EQ(run.model->memory().grads, adapter_elements * 4);
  int64_t base_elements = 0;
  for (const UnitLayout& unit : run.model->base().units) base_elements += unit.shard_numel;
  // fp32 compute: the adapters' masters are their compute copies; the base is held once.
  EXPECT_EQ(run.model->memory().params, (adapter_elements + base_elements) * 4);
}

TEST(LoraEngine, EstimateCountsTheFrozenBaseAndTheAdapterStates) {
  const ModelConfig config = preset_config("debug");
  LoraRun run(Sharding::full, whole_adapters(config, false), Recompute::full);
  EstimateInputs in;
  in.ranks_per_node = world_communicator().size();
  in.compute_bytes = 4;
  in.on_gpu = false;
  in.adapters = {kRank, test_targets()};
  const MemoryEstimate estimate = estimate_memory(config, in);
  const EngineMemory engine = run.model->memory();
  EXPECT_EQ(estimate.params, engine.params);
  EXPECT_EQ(estimate.grads, engine.grads);
  int64_t base_bytes = 0;
  for (const at::Tensor& shard : run.model->base().shards) base_bytes += static_cast<int64_t>(shard.nbytes());
  EXPECT_EQ(estimate.frozen_bytes, base_bytes);
  EXPECT_EQ(estimate.optimizer, 2 * estimate.grads);  // AdamW m and v of the adapters only
}

}  // namespace
}  // namespace st

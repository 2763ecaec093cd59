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

constexpr uint64_t kSeed = kAdapterSeed;
constexpr int64_t kRank = kAdapterRank;
constexpr double kScale = kAdapterScale;
constexpr int64_t kChunk = kAdapterChunk;

const std::vector<LoraTarget>& test_targets() {
  static const std::vector<LoraTarget> targets = lora_targets(kAdapterTargets);
  return targets;
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
  EXPECT_LT(ST_RELATIVE_DIFF(logps, my_rows(dense.detach(), adapter_test_pairs().size()), 1e-5), 1e-5);
  torch::autograd::backward({logps.sum() / rows});  // the ranks' gradients are summed
  const auto& units = run.model->units();
  for (size_t u = 0; u < units.size(); ++u) {
    const at::Tensor expected = expected_shard(units[u], run.groups.shard->rank(), [&](const ParamSlot& slot) {
      return adapters.at(slot.spec.name).grad();
    });
    if (units[u].params.empty()) {
      EXPECT_EQ(run.model->grad_shards()[u].abs().sum().item<double>(), 0.0) << units[u].name;
      continue;
    }
    EXPECT_LT(ST_RELATIVE_DIFF(run.model->grad_shards()[u], expected, 1e-5), 1e-5)
        << units[u].name << " on rank " << world_communicator().rank() << " of " << world_communicator().size();
  }
}

INSTANTIATE_TEST_SUITE_P(StrategiesAndPolicies, LoraGradients,
                         ::testing::ValuesIn(kAdapterGradientCases));

TEST(LoraEngine, FreshAdaptersLeaveTheBaseAndTheBaseAloneIsTheReference) {
  const ModelConfig config = preset_config("debug");
  const TensorMap base = init_preset_weights(config, kSeed, at::kFloat);
  const at::Tensor dense_base = my_rows(dense_logps(config, base, 0.0), adapter_test_pairs().size());

  LoraRun fresh(Sharding::full, whole_adapters(config, /*zero_b=*/true), Recompute::full);
  const at::NoGradGuard no_grad;
  const at::Tensor policy = engine_logps(*fresh.model);
  EXPECT_TRUE(at::equal(policy, engine_logps(*fresh.model, /*base_only=*/true)));
  EXPECT_LT(ST_RELATIVE_DIFF(policy, dense_base, 1e-5), 1e-5);

  LoraRun trained(Sharding::full, whole_adapters(config, /*zero_b=*/false), Recompute::full);
  EXPECT_LT(ST_RELATIVE_DIFF(engine_logps(*trained.model, /*base_only=*/true), dense_base, 1e-5), 1e-5);
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
  for (size_t u = 0; u < grads[0].size(); ++u) EXPECT_LT(ST_RELATIVE_DIFF(grads[0][u], grads[1][u], 1e-6), 1e-6) << u;
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

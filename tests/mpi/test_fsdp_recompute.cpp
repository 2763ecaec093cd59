// train.recompute: full, selective and none give identical losses and gradient shards (fp32,
// CPU) under every sharding strategy, tied and untied, with gradients accumulated over two
// micro-batches; kept units take their gradient buffers only in backward; the plan for auto
// keeps what a budget allows.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include "data/collate.h"
#include "fsdp/fsdp_model.h"
#include "fsdp/shard_source.h"
#include "fsdp_test_support.h"
#include "hf/presets.h"
#include "mpi_test_main.h"
#include "util/errors.h"

namespace st {
namespace {

using namespace st::testing;

struct Outcome {
  std::vector<double> losses;
  std::vector<at::Tensor> grads;
};

// Two micro-batches of this rank's share, forward + backward, with every layer on `policy`.
Outcome accumulate(const ModelConfig& config, Sharding sharding, Recompute policy) {
  ShardingGroups groups = test_groups(sharding);
  ModelShards shards = init_model_shards(config, 11, groups.shard->size(), groups.shard->rank());
  FsdpModelOptions options;
  options.logp_chunk_tokens = 16;
  options.recompute = plan_recompute(config, {policy, 0, 4, 0, -1});
  FsdpModel model(config, shards.units, groups, shards.masters, options);
  model.zero_grad();
  Outcome outcome;
  const std::vector<Pair> mine = my_share(global_pairs(4 * world_communicator().size(), 3));
  for (int micro = 0; micro < 2; ++micro) {
    const std::vector<Pair> half(mine.begin() + micro * 2, mine.begin() + micro * 2 + 2);
    const MicroBatch batch = collate_pairs(half, PairKind::dpo, {});
    const at::Tensor loss = pair_loss(model.sequence_logps(batch.input_ids, batch.targets), 2);
    outcome.losses.push_back(loss.item<double>());
    torch::autograd::backward({loss});
  }
  for (const at::Tensor& grad : model.grad_shards()) outcome.grads.push_back(grad.clone());
  return outcome;
}

class FsdpRecompute : public ::testing::TestWithParam<Sharding> {};

TEST_P(FsdpRecompute, EveryPolicyGivesIdenticalLossesAndGradients) {
  for (const bool tied : {false, true}) {
    ModelConfig config = preset_config("debug");
    config.tie_word_embeddings = tied;
    const Outcome full = accumulate(config, GetParam(), Recompute::full);
    for (const Recompute policy : {Recompute::selective, Recompute::none}) {
      const Outcome other = accumulate(config, GetParam(), policy);
      const std::string where = std::string(enum_name(policy)) + (tied ? " tied" : " untied");
      EXPECT_EQ(other.losses, full.losses) << where;
      ASSERT_EQ(other.grads.size(), full.grads.size());
      for (size_t u = 0; u < full.grads.size(); ++u) {
        EXPECT_TRUE(at::equal(other.grads[u], full.grads[u]))
            << where << ", unit " << u << ": max difference " << (other.grads[u] - full.grads[u]).abs().max().item<double>();
      }
    }
  }
}

// A unit that keeps its graph from forward (none) takes its gradient buffer only when its
// backward starts: after the forward only the head's are taken (the model writes the lm_head's
// gradient into it), and backward holds a unit's buffer and the one before it, still reducing.
TEST_P(FsdpRecompute, KeptUnitsTakeTheirGradientBufferOnlyInBackward) {
  for (const bool tied : {false, true}) {
    ModelConfig config = preset_config("debug");
    config.tie_word_embeddings = tied;
    ASSERT_GE(config.num_hidden_layers, 2);
    ShardingGroups groups = test_groups(GetParam());
    ModelShards shards = init_model_shards(config, 11, groups.shard->size(), groups.shard->rank());
    FsdpModelOptions options;
    options.logp_chunk_tokens = 16;
    options.recompute = plan_recompute(config, {Recompute::none, 0, 4, 0, -1});
    FsdpModel model(config, shards.units, groups, shards.masters, options);
    model.zero_grad();
    const MicroBatch batch = collate_pairs(my_share(global_pairs(2 * world_communicator().size(), 3)), PairKind::dpo, {});
    const at::Tensor loss = pair_loss(model.sequence_logps(batch.input_ids, batch.targets), 2);
    const std::string where = tied ? "tied" : "untied";
    if (model.writes_shards_directly()) {  // one rank: gradients go straight into the shards
      torch::autograd::backward({loss});
      EXPECT_EQ(model.most_gradient_buffers_alive(), 0) << where;
      continue;
    }
    const int64_t head_buffers = tied ? 2 : 1;  // the tied head's gradient also reaches the embedding
    EXPECT_EQ(model.gradient_buffers_alive(), head_buffers) << where << ": buffers taken in forward";
    torch::autograd::backward({loss});
    EXPECT_EQ(model.gradient_buffers_alive(), 0) << where;
    EXPECT_LE(model.most_gradient_buffers_alive(), head_buffers + 1) << where;
  }
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, FsdpRecompute, ::testing::ValuesIn(kAllShardings),
                         [](const ::testing::TestParamInfo<Sharding>& info) { return enum_name(info.param); });

TEST(RecomputePlan, AutoKeepsWhatTheBudgetAllowsFromTheFirstLayerOn) {
  const ModelConfig config = preset_config("debug");
  const int64_t tokens = 64, bytes = 4;
  const int64_t none = layer_kept_bytes(config, Recompute::none, tokens, bytes, 0);
  const int64_t selective = layer_kept_bytes(config, Recompute::selective, tokens, bytes, 0);
  ASSERT_GT(none, selective);
  ASSERT_GT(selective, 0);
  const auto plan = plan_recompute(config, {Recompute::automatic, tokens, bytes, 0, none + selective});
  ASSERT_EQ(plan.size(), static_cast<size_t>(config.num_hidden_layers) + 2);
  EXPECT_EQ(plan[1], Recompute::none);
  if (config.num_hidden_layers >= 3) {
    EXPECT_EQ(plan[2], Recompute::selective);
    EXPECT_EQ(plan[3], Recompute::full);
  }
  const auto unlimited = plan_recompute(config, {Recompute::automatic, tokens, bytes, 0, -1});
  for (size_t layer = 1; layer + 1 < unlimited.size(); ++layer) EXPECT_EQ(unlimited[layer], Recompute::none);
  const auto nothing = plan_recompute(config, {Recompute::automatic, tokens, bytes, 0, 0});
  EXPECT_EQ(describe_recompute_plan(nothing), "full x " + std::to_string(config.num_hidden_layers));
  EXPECT_EQ(parse_enum<Recompute>("auto", "train.recompute"), Recompute::automatic);
  EXPECT_THROW(parse_enum<Recompute>("some", "train.recompute"), ConfigError);
}

}  // namespace
}  // namespace st

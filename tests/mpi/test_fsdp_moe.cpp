// A mixture-of-experts model (debug-moe: 8 experts, top-2, one dense layer among sparse ones; and
// debug-qwen3.5-moe: a hybrid whose every layer routes, a shared expert beside the routed ones) on
// the FSDP engine against single-process autograd on the whole model, for every sharding strategy
// and recompute policy on 1-4 ranks, and for every expert-parallel size that divides the experts
// and the ranks (also with every token routed to experts 0 and 1, so that one rank gets every
// token and the others' experts none): the same log-probs, each rank's router load-balancing loss
// equal to transformers' load_balancing_loss_func over that rank's rows (written out here as
// transformers writes it; each of TRL's data-parallel processes takes it over its own batch), and
// each rank's gradient shard of sum(logps) / rows + coefficient x the ranks' mean router loss
// equal to its slice of the whole model's gradient.
// fp32 is judged by the same whole-model computation in float64. The routers are N(0, 1), as
// trained routers pick their experts with clear margins: an fp32 rounding reorders no top-k.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <map>
#include <numeric>

#include "data/collate.h"
#include "data/sampler.h"
#include "distributed/value_gather.h"
#include "fsdp/fsdp_model.h"
#include "fsdp/recompute.h"
#include "fsdp/shard_source.h"
#include "fsdp/whole_model.h"
#include "fsdp_test_support.h"
#include "hf/model_weights.h"
#include "hf/presets.h"
#include "model/generation.h"
#include "model/llama_units.h"
#include "model/moe_block.h"
#include "model/rope.h"
#include "mpi_test_main.h"

namespace st {
namespace {

using namespace st::testing;

constexpr uint64_t kSeed = 5;
constexpr double kCoefficient = 0.5;  // large enough that the router loss moves every router's gradient

// debug-moe, or debug-qwen3.5-moe: a hybrid's Gated DeltaNet and attention layers, every MLP sparse
// with a shared expert beside its 8 routed ones.
const ModelConfig& moe_config(const std::string& preset = "debug-moe") {
  static std::map<std::string, ModelConfig> configs;
  if (configs.count(preset) == 0) configs.emplace(preset, preset_config(preset));
  return configs.at(preset);
}

const std::vector<Pair>& moe_pairs() {
  static const std::vector<Pair> pairs = global_pairs(8, 2);
  return pairs;
}

// The preset's weights with N(0, 1) routers, in `dtype`. `lopsided`: every token's hidden state
// carries a large positive first component (the embedding's) and every router ranks experts 0
// and 1 first by it, by a wide margin.
TensorMap moe_weights(at::ScalarType dtype, bool lopsided = false, const std::string& preset = "debug-moe") {
  TensorMap weights = init_preset_weights(moe_config(preset), kSeed, at::kDouble);
  at::manual_seed(kSeed);
  for (auto& [name, tensor] : weights) {
    if (name.find("mlp.gate.weight") != std::string::npos) tensor = at::randn(tensor.sizes(), at::kDouble);
  }
  if (lopsided) {
    weights.at("model.embed_tokens.weight").select(1, 0).fill_(1.0);
    for (auto& [name, tensor] : weights) {
      if (name.find("mlp.gate.weight") == std::string::npos) continue;
      tensor.mul_(0.01);
      tensor.select(1, 0).copy_(at::tensor({4.0, 3.5, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0}, at::kDouble));
    }
  }
  for (auto& [name, tensor] : weights) tensor = tensor.to(dtype).requires_grad_(true);
  return weights;
}

// transformers' load_balancing_loss_func over the sparse layers' router probabilities [N, E],
// `mask` [N] the tokens' weights: E x sum_e (masked top-k picks of e / rows) x (masked
// probability of e / rows), rows = layers x masked tokens.
at::Tensor transformers_aux_loss(const std::vector<at::Tensor>& probs, const at::Tensor& mask, int64_t top_k) {
  const int64_t experts = probs.front().size(1);
  at::Tensor picks = at::zeros({experts}, probs.front().options());
  at::Tensor probability = at::zeros({experts}, probs.front().options());
  at::Tensor rows = at::zeros({}, probs.front().options());
  for (const at::Tensor& layer : probs) {
    const at::Tensor selected = std::get<1>(at::topk(layer.detach(), top_k, -1));
    picks = picks + at::zeros({experts}, layer.options()).scatter_add(0, selected.reshape(-1),
                                                                      mask.repeat_interleave(top_k));
    probability = probability + (layer * mask.unsqueeze(1)).sum(0);
    rows = rows + mask.sum();
  }
  return (picks / rows * (probability / rows)).sum() * experts;
}

// Rank `rank`'s rows of the whole batch of `pairs` pairs (its pairs' chosen and rejected rows), 1.
at::Tensor rank_rows(size_t pairs, int rank, int size) {
  std::vector<uint64_t> indices(pairs);
  std::iota(indices.begin(), indices.end(), 0);
  at::Tensor mask = at::zeros({2 * static_cast<int64_t>(pairs)}, at::kDouble);
  for (uint64_t i : rank_slice(indices, rank, size)) {
    mask[static_cast<int64_t>(i)] = 1.0;
    mask[static_cast<int64_t>(pairs + i)] = 1.0;
  }
  return mask;
}

struct WholeRun {
  at::Tensor logps;              // per row
  std::vector<at::Tensor> aux;   // each world rank's router loss, over its rows
};

// The whole model over every pair, unit by unit, keeping each sparse layer's routing; the loss
// sum(logps) / rows + kCoefficient x the ranks' mean router loss, backpropagated into `weights`.
WholeRun whole_run(const TensorMap& weights, const MicroBatch& all, const ModelConfig& config = moe_config()) {
  const at::ScalarType dtype = weights.begin()->second.scalar_type();
  const LlamaWeights model = llama_weights(weights, config);
  const TokenBatch batch = make_token_batch(all.input_ids, all.targets, rope_inverse_frequencies(config), dtype, 64);
  const size_t count = run_unit_count(config);
  at::Tensor hidden = llama_unit_forward(config, 0, unit_params(model, config, 0), {}, batch);
  std::vector<at::Tensor> probs;
  for (size_t u = 1; u + 1 < count; ++u) {
    Routing routing;
    hidden = llama_unit_forward(config, u, unit_params(model, config, u), hidden, batch, nullptr, {}, &routing);
    if (config.sparse_layer(static_cast<int64_t>(u) - 1)) probs.push_back(routing.probs);
  }
  WholeRun run;
  run.logps = llama_unit_forward(config, count - 1, unit_params(model, config, count - 1), hidden, batch);
  const int ranks = world_communicator().size();
  const auto pairs = static_cast<size_t>(all.pairs);
  at::Tensor mean_aux = at::zeros({}, probs.front().options());
  for (int rank = 0; rank < ranks; ++rank) {
    const at::Tensor mask = all.token_weights.to(at::kDouble) * rank_rows(pairs, rank, ranks).unsqueeze(1);
    run.aux.push_back(transformers_aux_loss(probs, mask.reshape(-1).to(probs.front().scalar_type()),
                                            config.experts.experts_per_token));
    mean_aux = mean_aux + run.aux.back() / ranks;
  }
  torch::autograd::backward({run.logps.sum() / run.logps.size(0) + kCoefficient * mean_aux});
  return run;
}

// `sharding`'s groups with the world split into expert-parallel groups of `expert_parallel` ranks.
ShardingGroups expert_parallel_groups(Sharding sharding, int64_t expert_parallel) {
  ShardingGroups groups = test_groups(sharding);
  add_expert_groups(groups, test_world().comm(), expert_parallel, [](MPI_Comm comm) -> std::unique_ptr<Communicator> {
    return std::make_unique<MpiCommunicator>(comm, test_world().watchdog());
  });
  return groups;
}

// The units of the model and this rank's fp32 master shards of `whole` in them.
struct ShardsOf {
  std::vector<UnitLayout> units;
  std::vector<at::Tensor> masters;
};
ShardsOf shards_of(const ModelConfig& config, const TensorMap& whole, ShardingGroups& groups) {
  const int rank = groups.shard->rank();
  ShardsOf out{init_model_shards(config, kSeed, groups.shard->size(), rank).units, {}};
  for (const UnitLayout& unit : out.units) {
    out.masters.push_back(
        expected_shard(unit, rank, [&](const ParamSlot& slot) { return whole.at(slot.spec.name).detach(); }));
  }
  return out;
}

struct MoeCase {
  Sharding sharding;
  Recompute policy;
  int64_t expert_parallel = 1;
  bool lopsided = false;  // moe_weights
  const char* preset = "debug-moe";
};

class FsdpRouterLoss : public ::testing::TestWithParam<MoeCase> {};

TEST_P(FsdpRouterLoss, LossAndGradientsEqualSingleProcessAutograd) {
  const auto [sharding, policy, expert_parallel, lopsided, preset] = GetParam();
  if (world_communicator().size() % expert_parallel != 0) GTEST_SKIP() << "the expert-parallel size does not divide the ranks";
  const ModelConfig& config = moe_config(preset);
  const MicroBatch all = collate_pairs(moe_pairs(), PairKind::dpo, {});
  const TensorMap whole = moe_weights(at::kFloat, lopsided, preset), exact = moe_weights(at::kDouble, lopsided, preset);
  const WholeRun want = whole_run(whole, all, config), want64 = whole_run(exact, all, config);

  ShardingGroups groups = expert_parallel_groups(sharding, expert_parallel);
  const int rank = groups.shard->rank();
  const ShardsOf shards = shards_of(config, whole, groups);
  const std::vector<UnitLayout>& units = shards.units;
  const std::vector<at::Tensor>& masters = shards.masters;
  FsdpModelOptions options{at::kFloat, at::kFloat, at::kCPU, 64};
  options.recompute = plan_recompute(config, {policy, 0, 4, 0, -1});
  FsdpModel model(config, units, groups, masters, options);
  const MicroBatch local = collate_pairs(my_share(moe_pairs()), PairKind::dpo, {});
  const at::Tensor logps =
      model.sequence_logps(model.make_batch(local.input_ids, local.targets, local.layout, local.token_weights));
  const RouterLoss router = model.router_loss(logps);
  const int ranks = world_communicator().size(), me = world_communicator().rank();
  torch::autograd::backward({logps.sum() / all.input_ids.size(0) + kCoefficient * router.loss / ranks});

  for (size_t u = run_unit_count(config); u < units.size(); ++u) {  // each rank gathers its own experts alone
    EXPECT_EQ(model.gathered_numel(units[u], u) * expert_parallel, units[u].padded_numel) << units[u].name;
  }
  const size_t pairs = moe_pairs().size();
  EXPECT_LE(ST_ROUNDINGS(logps.detach(), my_rows(want.logps.detach(), pairs), my_rows(want64.logps.detach(), pairs),
                         kOtherOrderRoundings),
            kOtherOrderRoundings);
  EXPECT_LE(ST_ROUNDINGS(router.loss.detach(), want.aux[static_cast<size_t>(me)].detach(),
                         want64.aux[static_cast<size_t>(me)].detach(), kOtherOrderRoundings),
            kOtherOrderRoundings);
  for (size_t u = 0; u < units.size(); ++u) {
    EXPECT_LE(ST_ROUNDINGS(model.grad_shards()[u], expected_grad_shard(units[u], rank, whole),
                           expected_grad_shard(units[u], rank, exact), kOtherOrderRoundings),
              kOtherOrderRoundings)
        << units[u].name << " on rank " << world_communicator().rank() << " of " << world_communicator().size();
  }
}

// The check above can fail: without the router loss every router's gradient is another.
TEST(FsdpRouterLoss, TheRouterLossMovesEveryRoutersGradient) {
  const ModelConfig& config = moe_config();
  const MicroBatch all = collate_pairs(moe_pairs(), PairKind::dpo, {});
  const TensorMap with = moe_weights(at::kDouble), without = moe_weights(at::kDouble);
  whole_run(with, all);
  const LlamaWeights model = llama_weights(without, config);
  torch::autograd::backward({llama_sequence_logps(model, config,
                                                  make_token_batch(all.input_ids, all.targets,
                                                                   rope_inverse_frequencies(config), at::kDouble, 64))
                                 .sum() /
                             all.input_ids.size(0)});
  int routers = 0;
  for (const auto& [name, tensor] : with) {
    if (name.find("mlp.gate.weight") == std::string::npos) continue;
    ++routers;
    const at::Tensor moved = tensor.grad() - without.at(name).grad();
    EXPECT_GT(moved.norm().item<double>(), 1e-3 * tensor.grad().norm().item<double>()) << name;
  }
  EXPECT_EQ(routers, config.sparse_layer_count());
}

std::string case_name(const ::testing::TestParamInfo<MoeCase>& info) {
  const MoeCase& c = info.param;
  return std::string(enum_name(c.sharding)) + "_" + enum_name(c.policy) +
         (c.expert_parallel > 1 ? "_ep" + std::to_string(c.expert_parallel) : "") + (c.lopsided ? "_lopsided" : "") +
         (std::string(c.preset) == "debug-moe" ? "" : "_qwen3_5_moe");
}

INSTANTIATE_TEST_SUITE_P(
    StrategiesAndPolicies, FsdpRouterLoss,
    ::testing::Values(MoeCase{Sharding::full, Recompute::full}, MoeCase{Sharding::full, Recompute::selective},
                      MoeCase{Sharding::full, Recompute::none}, MoeCase{Sharding::grad_op, Recompute::full},
                      MoeCase{Sharding::none, Recompute::selective}, MoeCase{Sharding::hybrid, Recompute::none}),
    case_name);

// Expert parallelism: each rank holds 8 / P experts, tokens travel by all-to-all; every policy
// (the all-to-all runs again in a recompute) and ZeRO-2's kept gathers.
INSTANTIATE_TEST_SUITE_P(
    ExpertParallel, FsdpRouterLoss,
    ::testing::Values(MoeCase{Sharding::full, Recompute::full, 2}, MoeCase{Sharding::full, Recompute::selective, 4},
                      MoeCase{Sharding::full, Recompute::none, 2}, MoeCase{Sharding::grad_op, Recompute::full, 4},
                      MoeCase{Sharding::full, Recompute::full, 2, true}, MoeCase{Sharding::full, Recompute::none, 4, true},
                      MoeCase{Sharding::full, Recompute::full, 1, true}),
    case_name);

// Qwen3.5-MoE's layers (Gated DeltaNet and gated attention, a shared expert in every sparse
// layer's unit beside the routed experts' unit), on the ranks alone and with expert parallelism.
INSTANTIATE_TEST_SUITE_P(
    SharedExpert, FsdpRouterLoss,
    ::testing::Values(MoeCase{Sharding::full, Recompute::full, 1, false, "debug-qwen3.5-moe"},
                      MoeCase{Sharding::grad_op, Recompute::none, 1, false, "debug-qwen3.5-moe"},
                      MoeCase{Sharding::full, Recompute::selective, 2, false, "debug-qwen3.5-moe"},
                      MoeCase{Sharding::full, Recompute::none, 2, true, "debug-qwen3.5-moe"}),
    case_name);

// Decoding with experts split over ranks (rollouts and generate tasks under dist.expert_parallel):
// each rank gathers only its run of every sparse layer's experts and reaches the others through
// the expert exchange, its ranks' decoding paired forward by forward however much each decodes.
// The ranks get 3, 0, 1 and 2 prompts with 9, 6, 12 and 3 new tokens at most and a stop that ends
// some completions early; each rank's completions must be what it samples from the whole model
// alone: the same ids and finish, log-probs within kDecodeRounding.
// The expert outputs of a token are the same fp32 sums, computed in a batch of other rows (the
// group's tokens for that expert): on 2 and 4 ranks the Cooperlake core shows no difference from
// the whole model's, Haswell at most 4.8e-7 (1 ulp at |logp| ~ 6); 1e-5 is 20x that, far below
// what another expert or a lost token moves a log-prob by (1e-1 and more).
constexpr double kDecodeRounding = 1e-5;

class FsdpMoeDecoding : public ::testing::TestWithParam<std::tuple<int64_t, const char*>> {};

TEST_P(FsdpMoeDecoding, SplitExpertsDecodeAsTheWholeModel) {
  const auto [expert_parallel, preset] = GetParam();
  const int ranks = world_communicator().size(), me = world_communicator().rank();
  if (ranks % expert_parallel != 0 || expert_parallel > ranks) GTEST_SKIP() << "the expert-parallel size does not divide the ranks";
  const ModelConfig& config = moe_config(preset);
  TensorMap whole = moe_weights(at::kFloat, false, preset);

  ShardingGroups groups = expert_parallel_groups(Sharding::full, expert_parallel);
  const ShardsOf shards = shards_of(config, whole, groups);
  FsdpModel model(config, shards.units, groups, shards.masters, FsdpModelOptions{at::kFloat, at::kFloat, at::kCPU, 64});
  const LlamaWeights split = gather_whole_model(model, world_communicator());
  const int64_t run = config.experts.num_experts / expert_parallel;
  for (const LayerWeights& layer : split.layers) {
    if (layer.experts.gate.empty()) continue;  // a dense layer
    int64_t held = 0;
    for (const at::Tensor& gate : layer.experts.gate) held += gate.defined() ? 1 : 0;
    EXPECT_EQ(held, run) << "layer " << layer.layer;
    EXPECT_TRUE(layer.experts.gate.at(static_cast<size_t>(groups.expert->rank() * run)).defined());
  }

  const int64_t prompt_counts[] = {3, 0, 1, 2}, new_tokens[] = {9, 6, 12, 3};
  std::vector<std::vector<int64_t>> prompts;
  for (int64_t p = 0; p < prompt_counts[me % 4]; ++p) {
    std::vector<int64_t> prompt;
    for (int64_t t = 0; t < 2 + 3 * p; ++t) prompt.push_back(3 + (17 * (me + 1) + 31 * p + 7 * t) % 500);
    prompts.push_back(prompt);
  }
  GenerationOptions options;
  options.sampling.temperature = 1.0;
  options.sampling.seed = 11;
  options.max_new_tokens = new_tokens[me % 4];
  options.batch_size = 2;
  options.completions_per_prompt = 2;
  options.stop = [](size_t index, const std::vector<int64_t>& ids) { return index % 3 == 1 && ids.size() == 2; };
  GenerationStats stats;
  const auto decoded = generate(split, config, prompts, options, static_cast<size_t>(10 * me), &stats);
  const auto alone = generate(llama_weights(whole, config), config, prompts, options, static_cast<size_t>(10 * me));
  ASSERT_EQ(decoded.size(), alone.size());
  for (size_t r = 0; r < alone.size(); ++r) {
    EXPECT_EQ(decoded[r].ids, alone[r].ids) << "rank " << me << ", completion " << r;
    EXPECT_EQ(decoded[r].finish, alone[r].finish) << "rank " << me << ", completion " << r;
    ASSERT_EQ(decoded[r].logps.size(), alone[r].logps.size());
    for (size_t t = 0; t < alone[r].logps.size(); ++t) {
      EXPECT_NEAR(decoded[r].logps[t], alone[r].logps[t], kDecodeRounding) << "rank " << me << ", completion " << r;
    }
  }
  // Every rank of an expert group (world ranks [k P, (k + 1) P)) ran as many forwards, idle ones
  // making up for what it decoded less; the rank with no prompt ran idle ones only.
  const std::vector<double> forwards = all_gather_values(
      world_communicator(), {static_cast<double>(stats.decode_steps + stats.prefills + stats.idle_forwards)});
  const auto first = static_cast<size_t>(me / expert_parallel * expert_parallel);
  for (size_t r = first; r < first + static_cast<size_t>(expert_parallel); ++r) {
    EXPECT_EQ(forwards[r], forwards[first]) << "rank " << r << " of rank " << me << "'s expert group";
  }
  if (prompts.empty()) {
    EXPECT_EQ(stats.decode_steps + stats.prefills, 0);
    EXPECT_GT(stats.idle_forwards, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(ExpertParallel, FsdpMoeDecoding,
                         ::testing::Values(std::make_tuple(int64_t{2}, "debug-moe"), std::make_tuple(int64_t{4}, "debug-moe"),
                                           std::make_tuple(int64_t{2}, "debug-qwen3.5-moe")),
                         [](const ::testing::TestParamInfo<std::tuple<int64_t, const char*>>& info) {
                           return "ep" + std::to_string(std::get<0>(info.param)) +
                                  (std::string(std::get<1>(info.param)) == "debug-moe" ? "" : "_qwen3_5_moe");
                         });

}  // namespace
}  // namespace st

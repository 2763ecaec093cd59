// A sparse layer's MLP (model/moe_block.h) against its definition written token by token: each
// token's output is the sum over its top-k experts of weight x SwiGLU expert(token), the router a
// softmax over all experts in fp32. fp32 is judged by the same definition in float64.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>

#include "hf/param_table.h"
#include "hf/presets.h"
#include "model/llama_blocks.h"
#include "model/moe_block.h"
#include "relative_diff.h"
#include "util/errors.h"

namespace st {
namespace {

struct Sparse {
  ModelConfig config = preset_config("debug-moe");
  LayerWeights weights;
  std::vector<at::Tensor> leaves;  // every weight, for gradients
};

// Layer 0 of debug-moe (sparse): its router and experts, random, in `dtype`, seeded.
Sparse sparse_layer(at::ScalarType dtype, uint64_t seed) {
  Sparse s;
  at::manual_seed(seed);
  for (const ParamSpec& spec : layer_params(s.config, 0)) {
    if (!is_expert_member(spec.key.member)) continue;
    at::Tensor tensor = (at::randn(spec.shape, at::kDouble) * 0.3).to(dtype).requires_grad_(true);
    s.weights.bind(spec.key, tensor);
    s.leaves.push_back(tensor);
  }
  return s;
}

Sparse converted(const Sparse& from, at::ScalarType dtype) {
  Sparse s;
  s.config = from.config;
  size_t next = 0;
  for (const ParamSpec& spec : layer_params(s.config, 0)) {
    if (!is_expert_member(spec.key.member)) continue;
    at::Tensor tensor = from.leaves[next++].detach().to(dtype).requires_grad_(true);
    s.weights.bind(spec.key, tensor);
    s.leaves.push_back(tensor);
  }
  return s;
}

// The definition, one token at a time, with the given experts per token (so fp32 and float64
// runs follow one routing) and weights from this run's own router probabilities.
at::Tensor token_by_token(const Sparse& s, const at::Tensor& tokens, const at::Tensor& picked) {
  const at::Tensor probs = at::softmax(at::matmul(tokens, s.weights[LayerParam::router].t()), -1);
  std::vector<at::Tensor> rows;
  for (int64_t t = 0; t < tokens.size(0); ++t) {
    const at::Tensor x = tokens[t];
    at::Tensor chosen = probs[t].index_select(0, picked[t]);
    if (s.config.experts.renormalize) chosen = chosen / chosen.sum();
    at::Tensor out = at::zeros_like(x);
    for (int64_t j = 0; j < picked.size(1); ++j) {
      const auto e = static_cast<size_t>(picked[t][j].item<int64_t>());
      const at::Tensor g = at::mv(s.weights.experts.gate[e], x), u = at::mv(s.weights.experts.up[e], x);
      out = out + chosen[j] * at::mv(s.weights.experts.down[e], at::silu(g) * u);
    }
    rows.push_back(out);
  }
  return at::stack(rows);
}

TEST(MoeBlock, RouterPicksTheTopKOfAnFp32SoftmaxAndRenormalises) {
  Sparse s = sparse_layer(at::kFloat, 1);
  const at::Tensor tokens = at::randn({12, s.config.hidden_size});
  const Routing r = route(tokens, s.weights[LayerParam::router], s.config.experts);
  EXPECT_EQ(r.probs.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::allclose(r.probs.sum(-1), at::ones({12}), 1e-6, 0));
  const auto [top, index] = at::topk(r.probs, 2, -1);
  EXPECT_TRUE(at::equal(r.experts, index));
  EXPECT_TRUE(at::allclose(r.weights, top / top.sum(-1, true), 1e-6, 0));
  s.config.experts.renormalize = false;  // Qwen3-MoE's norm_topk_prob false: the probabilities as they are
  EXPECT_TRUE(at::equal(route(tokens, s.weights[LayerParam::router], s.config.experts).weights, top));
}

// Value and every gradient (tokens, router, each expert's three weights) against the definition:
// fp32 within kOtherOrderRoundings of the float64 run's rounding unit.
void expect_definition(const Sparse& s, const at::Tensor& tokens32) {
  const Sparse wide = converted(s, at::kDouble);
  const at::Tensor tokens64 = tokens32.detach().to(at::kDouble).requires_grad_(true);
  const at::Tensor x32 = tokens32.detach().requires_grad_(true);
  const Routing r = route(x32, s.weights[LayerParam::router], s.config.experts);
  const at::Tensor got = expert_outputs(s.weights, x32, r);
  const at::Tensor want = token_by_token(s, x32, r.experts);
  const at::Tensor want64 = token_by_token(wide, tokens64, r.experts);
  EXPECT_LE(ST_ROUNDINGS(got, want, want64, testing::kOtherOrderRoundings), testing::kOtherOrderRoundings);
  const at::Tensor upstream = at::randn(got.sizes(), at::kDouble);
  auto grads = [&](const at::Tensor& out, const at::Tensor& x, const std::vector<at::Tensor>& leaves) {
    std::vector<at::Tensor> inputs{x};
    inputs.insert(inputs.end(), leaves.begin(), leaves.end());
    return torch::autograd::grad({(out * upstream.to(out.scalar_type())).sum()}, inputs, {}, true, false, true);
  };
  const auto g_got = grads(got, x32, s.leaves), g_want = grads(want, x32, s.leaves);
  const auto g_want64 = grads(want64, tokens64, wide.leaves);
  for (size_t i = 0; i < g_got.size(); ++i) {
    if (!g_want64[i].defined()) {  // an expert no token picked: no gradient in any run
      EXPECT_TRUE(!g_got[i].defined() || g_got[i].abs().max().item<double>() == 0) << i;
      continue;
    }
    EXPECT_LE(ST_ROUNDINGS(g_got[i], g_want[i], g_want64[i], testing::kOtherOrderRoundings),
              testing::kOtherOrderRoundings) << "gradient " << i;
  }
}

TEST(MoeBlock, GroupedByExpertEqualsTheDefinitionTokenByToken) {
  const Sparse s = sparse_layer(at::kFloat, 2);
  expect_definition(s, at::randn({40, s.config.hidden_size}));
}

TEST(MoeBlock, EveryTokenOnOneExpertAndExpertsThatGetNone) {
  Sparse s = sparse_layer(at::kFloat, 3);
  {  // expert 5's router row far ahead, expert 2 second: every token picks 5 and 2, the rest nothing
    at::NoGradGuard no_grad;
    s.weights[LayerParam::router][5].fill_(0).add_(1.0);
    s.weights[LayerParam::router][2].fill_(0).add_(0.5);
  }
  const at::Tensor tokens = at::rand({24, s.config.hidden_size}) + 0.5;  // positive: the rows' sums rank them
  const Routing r = route(tokens, s.weights[LayerParam::router], s.config.experts);
  EXPECT_TRUE(at::all(r.experts.select(1, 0) == 5).item<bool>());
  EXPECT_TRUE(at::all(r.experts.select(1, 1) == 2).item<bool>());
  expect_definition(s, tokens);
}

TEST(MoeBlock, ParamTableLaysOutExpertsAsTheFamiliesName) {
  const ModelConfig qwen = preset_config("debug-moe");
  std::vector<std::string> names;
  for (const ParamSpec& spec : layer_params(qwen, 0)) names.push_back(spec.name);
  const auto place = [&](const std::string& name) { return std::find(names.begin(), names.end(), name) - names.begin(); };
  EXPECT_LT(place("model.layers.0.mlp.gate.weight"), place("model.layers.0.mlp.experts.0.gate_proj.weight"));
  EXPECT_EQ(place("model.layers.0.mlp.experts.7.gate_proj.weight") + 1, place("model.layers.0.mlp.experts.0.up_proj.weight"));
  EXPECT_EQ(place("model.layers.0.mlp.experts.7.up_proj.weight") + 1, place("model.layers.0.mlp.experts.0.down_proj.weight"));
  EXPECT_EQ(place("model.layers.0.mlp.gate_proj.weight"), static_cast<long>(names.size()));  // no dense MLP
  for (const ParamSpec& spec : layer_params(qwen, 1)) {  // mlp_only_layers [1]: dense
    EXPECT_EQ(spec.name.find("experts"), std::string::npos) << spec.name;
  }
  ModelConfig mixtral = qwen;
  mixtral.model_type = ModelType::mixtral;
  EXPECT_EQ(expert_param_name(mixtral, 3, LayerParam::router, -1), "model.layers.3.block_sparse_moe.gate.weight");
  EXPECT_EQ(expert_param_name(mixtral, 3, LayerParam::expert_gate, 4), "model.layers.3.block_sparse_moe.experts.4.w1.weight");
  EXPECT_EQ(expert_param_name(mixtral, 3, LayerParam::expert_up, 4), "model.layers.3.block_sparse_moe.experts.4.w3.weight");
  EXPECT_EQ(expert_param_name(mixtral, 3, LayerParam::expert_down, 4), "model.layers.3.block_sparse_moe.experts.4.w2.weight");
  int64_t counted = 0;
  for (const ParamSpec& spec : all_params(qwen)) counted += spec.numel();
  EXPECT_EQ(counted, qwen.parameter_count());
  EXPECT_THROW(lora_layer_params(qwen, 0, {LoraTarget::gate}, 4), ModelError);
  EXPECT_NO_THROW(lora_layer_params(qwen, 1, {LoraTarget::gate}, 4));
}

}  // namespace
}  // namespace st

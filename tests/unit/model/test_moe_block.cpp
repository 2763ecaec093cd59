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

// Layer 0's parameters, its experts' included.
std::vector<ParamSpec> sparse_members(const ModelConfig& config) {
  std::vector<ParamSpec> specs = layer_params(config, 0);
  for (ParamSpec& spec : expert_params(config, 0)) specs.push_back(std::move(spec));
  return specs;
}

// Layer 0 of debug-moe (sparse): its router and experts, random, in `dtype`, seeded.
Sparse sparse_layer(at::ScalarType dtype, uint64_t seed) {
  Sparse s;
  at::manual_seed(seed);
  for (const ParamSpec& spec : sparse_members(s.config)) {
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
  for (const ParamSpec& spec : sparse_members(s.config)) {
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
  // The router where the dense MLP would be, after the attention; no dense MLP, no expert.
  EXPECT_LT(place("model.layers.0.self_attn.o_proj.weight"), place("model.layers.0.mlp.gate.weight"));
  EXPECT_LT(place("model.layers.0.mlp.gate.weight"), static_cast<long>(names.size()));
  EXPECT_EQ(place("model.layers.0.mlp.gate_proj.weight"), static_cast<long>(names.size()));
  for (const std::string& name : names) EXPECT_EQ(name.find("experts"), std::string::npos) << name;
  // The experts expert by expert, each gate, up, down: a run of experts is one run of elements.
  std::vector<std::string> experts;
  for (const ParamSpec& spec : expert_params(qwen, 0)) experts.push_back(spec.name);
  ASSERT_EQ(experts.size(), static_cast<size_t>(3 * qwen.experts.num_experts));
  for (int64_t e = 0; e < qwen.experts.num_experts; ++e) {
    const std::string prefix = "model.layers.0.mlp.experts." + std::to_string(e) + ".";
    EXPECT_EQ(experts[static_cast<size_t>(3 * e)], prefix + "gate_proj.weight");
    EXPECT_EQ(experts[static_cast<size_t>(3 * e + 1)], prefix + "up_proj.weight");
    EXPECT_EQ(experts[static_cast<size_t>(3 * e + 2)], prefix + "down_proj.weight");
  }
  EXPECT_TRUE(expert_params(qwen, 1).empty());  // mlp_only_layers [1]: dense
  for (const ParamSpec& spec : layer_params(qwen, 1)) {
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
}

// Expert e's slice of a stacked PEFT pair, written from PEFT's layout directly: A's rows
// [e r, (e + 1) r), B's columns e, e + E, e + 2E, ... (B.view(out, r, E)[:, :, e]).
at::Tensor expert_delta_weight(const at::Tensor& a, const at::Tensor& b, int64_t expert, int64_t experts) {
  const int64_t r = a.size(0) / experts;
  const at::Tensor columns = at::arange(expert, r * experts, experts, at::kLong);
  return b.index_select(1, columns).mm(a.narrow(0, expert * r, r));
}

TEST(MoeBlock, ExpertAdaptersEqualTheExpertsMergedAsPeftSlicesThem) {
  Sparse s = sparse_layer(at::kDouble, 6);
  const ModelConfig& config = s.config;
  const int64_t r = 3, experts = config.experts.num_experts, width = config.experts.expert_intermediate_size;
  const std::vector<ParamSpec> specs = lora_layer_params(config, 0, enum_values<LoraTarget>(), r);
  ASSERT_EQ(specs.size(), 12u);  // A and B of q, k, v, o, then of gate_up and of down
  TensorMap pairs;
  for (const ParamSpec& spec : specs) {
    pairs[spec.name] = (at::randn(spec.shape, at::kDouble) * 0.2).requires_grad_(true);
    s.weights.bind(spec.key, pairs[spec.name]);
  }
  const std::string block = "base_model.model.model.layers.0.mlp.experts.";
  const at::Tensor gate_up_a = pairs.at(block + "base_layer.lora_A.weight"), gate_up_b = pairs.at(block + "base_layer.lora_B.weight");
  const at::Tensor down_a = pairs.at(block + "lora_A.weight"), down_b = pairs.at(block + "lora_B.weight");
  EXPECT_EQ(gate_up_a.sizes(), at::IntArrayRef({2 * r * experts, config.hidden_size}));  // gate's r and up's r
  EXPECT_EQ(gate_up_b.sizes(), at::IntArrayRef({2 * width, 2 * r * experts}));
  EXPECT_EQ(down_a.sizes(), at::IntArrayRef({r * experts, width}));
  EXPECT_EQ(down_b.sizes(), at::IntArrayRef({config.hidden_size, r * experts}));
  s.weights.adapter.scale = 0.75;

  Sparse merged = converted(s, at::kDouble);
  {
    at::NoGradGuard no_grad;
    for (int64_t e = 0; e < experts; ++e) {
      const auto i = static_cast<size_t>(e);
      const at::Tensor gate_up = expert_delta_weight(gate_up_a, gate_up_b, e, experts) * 0.75;
      merged.weights.experts.gate[i] = merged.weights.experts.gate[i] + gate_up.narrow(0, 0, width);
      merged.weights.experts.up[i] = merged.weights.experts.up[i] + gate_up.narrow(0, width, width);
      merged.weights.experts.down[i] = merged.weights.experts.down[i] + expert_delta_weight(down_a, down_b, e, experts) * 0.75;
    }
  }
  const at::Tensor tokens = at::randn({30, config.hidden_size}, at::kDouble);
  const Routing routing = route(tokens, s.weights[LayerParam::router], config.experts);
  const at::Tensor got = expert_outputs(s.weights, tokens, routing);
  const at::Tensor want = expert_outputs(merged.weights, tokens, routing);
  // float64 both ways, x (W + s B A) against x W + s (x A) B: sums of at most D + r products
  // apart, each within D u of its magnitudes' sum; 1e-12 of the largest output is ~1e3 x that.
  EXPECT_LE((got - want).abs().max().item<double>(), 1e-12 * want.abs().max().item<double>());
  const auto grads = torch::autograd::grad({got.sum()}, {gate_up_a, gate_up_b, down_a, down_b});
  for (const at::Tensor& grad : grads) EXPECT_GT(grad.abs().max().item<double>(), 0.0);
}

TEST(MoeBlock, ExpertAdaptersComeAsGateUpAndDownTogether) {
  const ModelConfig config = preset_config("debug-moe");
  EXPECT_THROW(lora_layer_params(config, 0, {LoraTarget::q, LoraTarget::gate, LoraTarget::up}, 4), ModelError);
  EXPECT_THROW(lora_layer_params(config, 0, {LoraTarget::down}, 4), ModelError);
  EXPECT_EQ(lora_layer_params(config, 0, {LoraTarget::q, LoraTarget::gate, LoraTarget::up, LoraTarget::down}, 4).size(), 6u);
  // A dense layer of the same model keeps its MLP unadapted, as PEFT maps gate_proj.. to the experts.
  EXPECT_TRUE(lora_layer_params(config, 1, {LoraTarget::gate, LoraTarget::up, LoraTarget::down}, 4).empty());
  EXPECT_TRUE(adapted_weights(config, 1, LoraTarget::down).empty());
  EXPECT_EQ(adapted_weights(config, 1, LoraTarget::q).size(), 1u);
  std::vector<std::string> weights;
  for (const AdaptedWeight& piece : adapted_weights(config, 0, LoraTarget::gate)) weights.push_back(piece.weight);
  ASSERT_EQ(weights.size(), static_cast<size_t>(2 * config.experts.num_experts));
  EXPECT_EQ(weights[0], "model.layers.0.mlp.experts.0.gate_proj.weight");
  EXPECT_EQ(weights[1], "model.layers.0.mlp.experts.0.up_proj.weight");
  EXPECT_TRUE(adapted_weights(config, 0, LoraTarget::up).empty());
}

}  // namespace
}  // namespace st

// A sparse layer's experts on the GPU in bf16: one grouped GEMM per projection over every
// expert's rows (aten::_grouped_mm, libtorch >= 2.9) against one matmul per expert, both judged
// by the same layer in float64 on the CPU: outputs and the gradients of the tokens and of every
// expert weight. Routing makes some experts busy, one empty. Skipped without a GPU, a CUDA
// libtorch, or the kernel (then the loop runs on the GPU too, and nothing is to compare).
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <string>
#include <vector>

#include "hf/presets.h"
#include "model/llama_blocks.h"
#include "model/moe_block.h"
#include "util/torch_compat.h"

namespace st {
namespace {

struct LayerRun {
  at::Tensor output;                // fp32 on the CPU
  std::vector<at::Tensor> grads;    // tokens', then each expert weight's, fp32 on the CPU
};

LayerRun run(const ModelConfig& config, const std::vector<at::Tensor>& weights, const at::Tensor& tokens0,
        const at::Tensor& upstream, at::ScalarType type, at::Device device, ExpertKernel kernel) {
  LayerWeights w;
  std::vector<at::Tensor> leaves{tokens0.to(device, type).detach().requires_grad_(true)};
  size_t next = 0;
  for (const ParamSpec& spec : expert_params(config, 0)) {
    leaves.push_back(weights[next++].to(device, type).detach().requires_grad_(true));
    w.bind(spec.key, leaves.back());
  }
  const at::Tensor router = weights[next].to(device, type);
  const Routing routing = route(leaves.front(), router, config.experts);
  const at::Tensor out = expert_outputs(w, leaves.front(), routing, nullptr, kernel);
  torch::autograd::backward({(out.to(at::kDouble) * upstream.to(device, at::kDouble)).sum()});
  LayerRun result{out.detach().to(at::kFloat).cpu(), {}};
  for (const at::Tensor& leaf : leaves) {  // an expert no row reached has no gradient: zero
    result.grads.push_back(leaf.grad().defined() ? leaf.grad().to(at::kFloat).cpu() : at::zeros(leaf.sizes()));
  }
  return result;
}

double error(const at::Tensor& got, const at::Tensor& exact) {
  return (got.to(at::kDouble) - exact.to(at::kDouble)).abs().max().item<double>();
}

TEST(GroupedExperts, GroupedGemmIsAsCloseToFloat64AsTheExpertLoop) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  if (!compat::kHasGroupedMm) GTEST_SKIP() << "libtorch " << compat::torch_version() << " has no grouped GEMM";
  ModelConfig config = preset_config("debug-moe");
  config.experts.num_experts = 8;
  at::manual_seed(3);
  std::vector<at::Tensor> weights;
  for (const ParamSpec& spec : expert_params(config, 0)) weights.push_back(at::randn(spec.shape, at::kDouble) * 0.2);
  // Router: expert 7 never wins (a large negative logit for every positive token), the rest by chance.
  at::Tensor router = at::randn({config.experts.num_experts, config.hidden_size}, at::kDouble);
  router.select(0, 7).fill_(-1.0);
  weights.push_back(router);
  const at::Tensor tokens = at::rand({301, config.hidden_size}, at::kDouble) + 0.1;  // odd count, positive
  const at::Tensor upstream = at::randn({301, config.hidden_size}, at::kDouble);
  const LayerRun exact = run(config, weights, tokens, upstream, at::kDouble, at::kCPU, ExpertKernel::looped);
  const LayerRun looped = run(config, weights, tokens, upstream, at::kBFloat16, at::kCUDA, ExpertKernel::looped);
  const LayerRun grouped = run(config, weights, tokens, upstream, at::kBFloat16, at::kCUDA, ExpertKernel::automatic);
  // Both paths round at the same points (bf16 operands, fp32 accumulation, bf16 results); they
  // differ only in the order of each GEMM's fp32 sums. So the grouped path's error is the loop's
  // up to that order: bounded by 4x the loop's (and one bf16 ulp of the value's scale).
  const auto bound = [](double loop_error, const at::Tensor& exact_value) {
    return 4.0 * loop_error + exact_value.abs().max().item<double>() * std::ldexp(1.0, -8);
  };
  EXPECT_LE(error(grouped.output, exact.output), bound(error(looped.output, exact.output), exact.output));
  ASSERT_EQ(grouped.grads.size(), exact.grads.size());
  for (size_t i = 0; i < exact.grads.size(); ++i) {
    EXPECT_LE(error(grouped.grads[i], exact.grads[i]), bound(error(looped.grads[i], exact.grads[i]), exact.grads[i]))
        << (i == 0 ? std::string("tokens") : "expert weight " + std::to_string(i - 1));
  }
  EXPECT_EQ(exact.grads.back().abs().max().item<double>(), 0.0) << "expert 7's down projection got rows";
}

}  // namespace
}  // namespace st

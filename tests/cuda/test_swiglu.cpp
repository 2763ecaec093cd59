// cuda/'s fused SwiGLU (forward and backward) against its libtorch op sequence at odd sizes, in
// fp32 and bf16. Skipped without a GPU and a CUDA libtorch.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <string>
#include <vector>

#include "model/swiglu.h"
#include "relative_diff.h"

namespace st {
namespace {


struct ValueAndGrads {
  at::Tensor value, grad;  // grad: d/d(gate_up) [.., 2I]
};

// `fused_layout`: gate and up are the halves of one [.., 2I] tensor (strided rows), else two
// contiguous tensors.
template <typename Op>
ValueAndGrads run(const at::Tensor& gate_up0, const at::Tensor& upstream, bool fused_layout, const Op& op) {
  const at::Tensor gate_up = gate_up0.detach().clone().requires_grad_(true);
  std::vector<at::Tensor> halves = gate_up.chunk(2, -1);
  if (!fused_layout) halves = {halves[0].contiguous(), halves[1].contiguous()};
  const at::Tensor out = op(halves[0], halves[1]);
  torch::autograd::backward({(out.to(at::kFloat) * upstream).sum()});
  return {out.detach().to(at::kFloat).cpu(), gate_up.grad().to(at::kFloat).cpu()};
}

void expect_parity(at::ScalarType type, double tolerance) {
  const int64_t batch = 3, tokens = 37, width = 597;  // odd on purpose
  const at::TensorOptions gpu = at::TensorOptions(type).device(at::kCUDA);
  at::manual_seed(5);
  const at::Tensor gate_up = at::randn({batch, tokens, 2 * width}, gpu) * 3.0;
  const at::Tensor upstream = at::randn({batch, tokens, width}, at::TensorOptions(at::kFloat).device(at::kCUDA));
  const auto reference = [](const at::Tensor& g, const at::Tensor& u) { return swiglu_reference(g, u); };
  const auto fused = [](const at::Tensor& g, const at::Tensor& u) { return swiglu(g, u); };
  for (const bool fused_layout : {true, false}) {
    const ValueAndGrads want = run(gate_up, upstream, fused_layout, reference);
    const ValueAndGrads got = run(gate_up, upstream, fused_layout, fused);
    const std::string where = std::string(c10::toString(type)) + (fused_layout ? " fused halves" : " separate");
    EXPECT_LE(ST_RELATIVE_DIFF(got.value, want.value, tolerance, at::kFloat), tolerance) << where;
    EXPECT_LE(ST_RELATIVE_DIFF(got.grad, want.grad, tolerance, at::kFloat), tolerance) << where;
  }
}

TEST(FusedSwiglu, MatchesTheOpSequenceInFp32) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  expect_parity(at::kFloat, 1e-5);
}

TEST(FusedSwiglu, MatchesTheOpSequenceInBf16) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  // The kernel rounds once from fp32; the op sequence rounds after silu and after the multiply.
  expect_parity(at::kBFloat16, 2e-2);
}

}  // namespace
}  // namespace st

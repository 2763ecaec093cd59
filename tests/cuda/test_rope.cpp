// cuda/'s fused rotary embedding (forward and backward) against its libtorch op sequence on
// transposed [B, H, T, D] views, as attention uses them, in fp32 and bf16. Skipped without a
// GPU and a CUDA libtorch.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include "hf/presets.h"
#include "model/rope.h"
#include "relative_diff.h"

namespace st {
namespace {


struct ValueAndGrad {
  at::Tensor value, grad;
};

template <typename Op>
ValueAndGrad run(const at::Tensor& projected0, const at::Tensor& upstream, const Op& op) {
  const at::Tensor projected = projected0.detach().clone().requires_grad_(true);
  const at::Tensor out = op(projected.transpose(1, 2));
  torch::autograd::backward({(out.to(at::kFloat) * upstream).sum()});
  return {out.detach().to(at::kFloat).cpu(), projected.grad().to(at::kFloat).cpu()};
}

void expect_parity(at::ScalarType type, double tolerance) {
  const ModelConfig config = preset_config("debug");
  const int64_t batch = 3, tokens = 37, heads = 5, head_dim = config.head_dim;
  const at::Tensor frequencies = rope_inverse_frequencies(config).to(at::kCUDA);
  const RopeTables tables = make_rope_tables(frequencies, tokens, type);
  at::manual_seed(8);
  const at::Tensor projected = at::randn({batch, tokens, heads, head_dim}, at::TensorOptions(type).device(at::kCUDA));
  const at::Tensor upstream =
      at::randn({batch, heads, tokens, head_dim}, at::TensorOptions(at::kFloat).device(at::kCUDA));
  const ValueAndGrad got = run(projected, upstream, [&](const at::Tensor& x) { return apply_rotary(x, tables); });
  const ValueAndGrad want =
      run(projected, upstream, [&](const at::Tensor& x) { return apply_rotary_reference(x, tables); });
  EXPECT_LE(ST_RELATIVE_DIFF(got.value, want.value, tolerance, at::kFloat), tolerance) << c10::toString(type);
  EXPECT_LE(ST_RELATIVE_DIFF(got.grad, want.grad, tolerance, at::kFloat), tolerance) << c10::toString(type);
}

TEST(FusedRotary, MatchesTheOpSequenceInFp32) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  expect_parity(at::kFloat, 1e-6);
}

TEST(FusedRotary, MatchesTheOpSequenceInBf16) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  expect_parity(at::kBFloat16, 2e-2);
}

}  // namespace
}  // namespace st

// cuda/'s fused RMSNorm (alone and after the residual add; forward and backward) against its
// libtorch op sequence at odd sizes, in fp32 and bf16. Skipped without a GPU and a CUDA libtorch.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <string>
#include <vector>

#include "model/rms_norm.h"
#include "relative_diff.h"

namespace st {
namespace {


// Outputs and input gradients of add_rms_norm (or rms_norm without a residual).
template <typename Add, typename Norm>
std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs, bool with_residual, const Add& add, const Norm& norm) {
  const at::Tensor x = inputs[0].detach().clone().requires_grad_(true);
  const at::Tensor residual = inputs[1].detach().clone().requires_grad_(true);
  const at::Tensor weight = inputs[2].detach().clone().requires_grad_(true);
  const at::Tensor& upstream_normed = inputs[3];
  const at::Tensor& upstream_sum = inputs[4];
  std::vector<at::Tensor> outputs;
  if (with_residual) {
    const NormedSum out = add(x, residual, weight);
    torch::autograd::backward({(out.normed.to(at::kFloat) * upstream_normed).sum() +
                               (out.sum.to(at::kFloat) * upstream_sum).sum()});
    outputs = {out.sum, out.normed, x.grad(), residual.grad(), weight.grad()};
  } else {
    const at::Tensor normed = norm(x, weight);
    torch::autograd::backward({(normed.to(at::kFloat) * upstream_normed).sum()});
    outputs = {normed, x.grad(), weight.grad()};
  }
  for (at::Tensor& t : outputs) t = t.detach().to(at::kFloat).cpu();
  return outputs;
}

void expect_parity(at::ScalarType type, double tolerance) {
  const int64_t batch = 3, tokens = 37, width = 597;  // odd on purpose; 111 rows: 4 weight-gradient groups
  const at::TensorOptions gpu = at::TensorOptions(type).device(at::kCUDA);
  const at::TensorOptions fp32 = at::TensorOptions(at::kFloat).device(at::kCUDA);
  at::manual_seed(9);
  const std::vector<at::Tensor> inputs = {at::randn({batch, tokens, width}, gpu), at::randn({batch, tokens, width}, gpu),
                                          1.0 + 0.1 * at::randn({width}, gpu), at::randn({batch, tokens, width}, fp32),
                                          at::randn({batch, tokens, width}, fp32)};
  const double eps = 1e-5;
  const auto fused_add = [&](const at::Tensor& x, const at::Tensor& r, const at::Tensor& w) { return add_rms_norm(x, r, w, eps); };
  const auto reference_add = [&](const at::Tensor& x, const at::Tensor& r, const at::Tensor& w) {
    return add_rms_norm_reference(x, r, w, eps);
  };
  const auto fused_norm = [&](const at::Tensor& x, const at::Tensor& w) { return rms_norm(x, w, eps); };
  const auto reference_norm = [&](const at::Tensor& x, const at::Tensor& w) { return rms_norm_reference(x, w, eps); };
  for (const bool with_residual : {true, false}) {
    const std::vector<at::Tensor> got = run(inputs, with_residual, fused_add, fused_norm);
    const std::vector<at::Tensor> want = run(inputs, with_residual, reference_add, reference_norm);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_LE(ST_RELATIVE_DIFF(got[i], want[i], tolerance, at::kFloat), tolerance)
          << c10::toString(type) << (with_residual ? " with residual" : " alone") << ", output " << i;
    }
  }
}

TEST(FusedRmsNorm, MatchesTheOpSequenceInFp32) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  expect_parity(at::kFloat, 1e-5);
}

TEST(FusedRmsNorm, MatchesTheOpSequenceInBf16) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  // The kernel keeps fp32 between its roundings where the op sequence rounds each op's result.
  expect_parity(at::kBFloat16, 2e-2);
}

}  // namespace
}  // namespace st

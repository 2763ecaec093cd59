// RMSNorm's CPU path is transformers' op sequence, alone and after the residual add; its
// gradients are the closed forms the CUDA kernel computes (tests/cuda/test_rms_norm.cpp holds
// the kernel to this path).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include "model/rms_norm.h"

namespace st {
namespace {

TEST(RmsNorm, CpuPathIsTheOpSequence) {
  at::manual_seed(1);
  const at::Tensor x = at::randn({2, 3, 11});
  const at::Tensor residual = at::randn({2, 3, 11});
  const at::Tensor weight = at::randn({11});
  const at::Tensor x32 = x.to(at::kFloat);
  const at::Tensor expected = weight * (x32 * at::rsqrt(x32.pow(2).mean(-1, true) + 1e-5));
  EXPECT_TRUE(at::equal(rms_norm(x, weight, 1e-5), expected));
  const NormedSum fused = add_rms_norm(x, residual, weight, 1e-5);
  EXPECT_TRUE(at::equal(fused.sum, x + residual));
  EXPECT_TRUE(at::equal(fused.normed, rms_norm(x + residual, weight, 1e-5)));
}

TEST(RmsNorm, GradientsAreTheKernelsClosedForms) {
  at::manual_seed(2);
  const double eps = 1e-6;
  const at::Tensor x = at::randn({5, 13}, at::kDouble).requires_grad_(true);
  const at::Tensor residual = at::randn({5, 13}, at::kDouble).requires_grad_(true);
  const at::Tensor weight = at::randn({13}, at::kDouble).requires_grad_(true);
  const at::Tensor grad_normed = at::randn({5, 13}, at::kDouble);
  const at::Tensor grad_sum = at::randn({5, 13}, at::kDouble);  // from the residual stream
  // The normalisation runs in fp32 (as transformers'), so fp64 inputs agree to fp32 precision.
  const NormedSum out = add_rms_norm(x, residual, weight, eps);
  torch::autograd::backward({(out.normed * grad_normed).sum() + (out.sum * grad_sum).sum()});

  const at::Tensor s = (x + residual).detach();
  const at::Tensor rstd = at::rsqrt(s.pow(2).mean(-1, true) + eps);
  const at::Tensor n = s * rstd;
  const at::Tensor dn = grad_normed * weight.detach();
  const at::Tensor ds = rstd * (dn - n * (dn * n).mean(-1, true)) + grad_sum;
  EXPECT_TRUE(at::allclose(x.grad(), ds, 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(residual.grad(), ds, 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(weight.grad(), (grad_normed * n).sum(0), 1e-5, 1e-6));
}

}  // namespace
}  // namespace st

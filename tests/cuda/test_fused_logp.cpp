// cuda/'s fused log-softmax gather (forward and backward, inside chunked_token_logps on CUDA)
// against the full-logits path on odd sizes, fp32 and bf16, with ignored targets and a chunk
// that does not divide the rows. Skipped without a GPU and a CUDA libtorch.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include "model/token_logp.h"
#include "relative_diff.h"

namespace st {
namespace {


struct LogpAndGrads {
  at::Tensor logps, grad_hidden, grad_weight;
};

template <typename Logps>
LogpAndGrads run(const at::Tensor& hidden0, const at::Tensor& weight0, const at::Tensor& upstream, const Logps& logps) {
  const at::Tensor hidden = hidden0.detach().clone().requires_grad_(true);
  const at::Tensor weight = weight0.detach().clone().requires_grad_(true);
  const at::Tensor out = logps(hidden, weight);
  torch::autograd::backward({(out * upstream).sum()});
  return {out.detach().to(at::kFloat).cpu(), hidden.grad().to(at::kFloat).cpu(), weight.grad().to(at::kFloat).cpu()};
}

void expect_parity(at::ScalarType type, double tolerance) {
  const int64_t rows = 37, dim = 24, vocab = 1001;  // odd on purpose
  const at::TensorOptions gpu = at::TensorOptions(type).device(at::kCUDA);
  at::manual_seed(11);
  const at::Tensor hidden = at::randn({rows, dim}, gpu);
  const at::Tensor weight = at::randn({vocab, dim}, gpu) * 0.5;
  at::Tensor targets = at::randint(0, vocab, {rows}, at::TensorOptions(at::kLong).device(at::kCUDA));
  targets.index_put_({at::arange(0, rows, 5, targets.options())}, kIgnoreTarget);  // every 5th row ignored
  const at::Tensor upstream = at::randn({rows}, at::TensorOptions(at::kFloat).device(at::kCUDA));

  const LogpAndGrads fused = run(hidden, weight, upstream, [&](const at::Tensor& h, const at::Tensor& w) {
    return chunked_token_logps(h, w, targets, 10);
  });
  const LogpAndGrads full = run(hidden, weight, upstream, [&](const at::Tensor& h, const at::Tensor& w) {
    return full_logits_token_logps(h, w, targets);
  });
  EXPECT_LE(ST_RELATIVE_DIFF(fused.logps, full.logps, tolerance, at::kFloat), tolerance) << "log-probs";
  EXPECT_LE(ST_RELATIVE_DIFF(fused.grad_hidden, full.grad_hidden, tolerance, at::kFloat), tolerance)
      << "hidden gradient";
  EXPECT_LE(ST_RELATIVE_DIFF(fused.grad_weight, full.grad_weight, tolerance, at::kFloat), tolerance)
      << "weight gradient";
  const at::Tensor ignored = targets.cpu().eq(kIgnoreTarget);
  EXPECT_EQ(fused.logps.masked_select(ignored).abs().max().item<float>(), 0.0f) << "ignored rows score 0";
}

TEST(FusedLogp, MatchesFullLogitsInFp32) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  expect_parity(at::kFloat, 1e-5);
}

TEST(FusedLogp, MatchesFullLogitsInBf16) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  // Both paths form bf16 logits with the same matmul; they differ in where the gradient is
  // rounded to bf16 (the fused kernel once, the full path after its fp32 softmax), ~1 bf16 ulp.
  expect_parity(at::kBFloat16, 1e-2);
}

}  // namespace
}  // namespace st

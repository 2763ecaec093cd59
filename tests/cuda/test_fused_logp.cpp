// cuda/'s fused log-softmax gather (forward and backward, inside chunked_token_logps on CUDA)
// against the full-logits path on odd sizes, fp32 and bf16, with ignored targets and a chunk
// that does not divide the rows, at temperature 1 and others, with the entropies. Skipped without a GPU and a CUDA libtorch.
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

void expect_parity(at::ScalarType type, double tolerance, double temperature = 1.0) {
  const int64_t rows = 37, dim = 24, vocab = 1001;  // odd on purpose
  const at::TensorOptions gpu = at::TensorOptions(type).device(at::kCUDA);
  at::manual_seed(11);
  const at::Tensor hidden = at::randn({rows, dim}, gpu);
  const at::Tensor weight = at::randn({vocab, dim}, gpu) * 0.5;
  at::Tensor targets = at::randint(0, vocab, {rows}, at::TensorOptions(at::kLong).device(at::kCUDA));
  targets.index_put_({at::arange(0, rows, 5, targets.options())}, kIgnoreTarget);  // every 5th row ignored
  const at::Tensor upstream = at::randn({rows}, at::TensorOptions(at::kFloat).device(at::kCUDA));

  TokenLogpOptions options;
  options.chunk_tokens = 10;
  options.temperature = temperature;
  options.entropies = true;
  at::Tensor entropies;
  const LogpAndGrads fused = run(hidden, weight, upstream, [&](const at::Tensor& h, const at::Tensor& w) {
    const TokenLogps out = chunked_token_logps(h, w, targets, options);
    entropies = out.entropies.to(at::kFloat).cpu();
    return out.logps;
  });
  const LogpAndGrads full = run(hidden, weight, upstream, [&](const at::Tensor& h, const at::Tensor& w) {
    return full_logits_token_logps(h, w, targets, temperature);
  });
  // The entropies against the full softmax of the same logits, in fp32.
  const at::Tensor logits = at::matmul(hidden, weight.t()).to(at::kFloat) / temperature;
  const at::Tensor expected_entropies = -(at::softmax(logits, -1) * at::log_softmax(logits, -1)).sum(-1).cpu();
  EXPECT_LE(ST_RELATIVE_DIFF(entropies, expected_entropies, tolerance, at::kFloat), tolerance) << "entropies";
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

// GRPO scores at the sampling temperature: the kernels divide each logit by it (and the
// gradient), and their second pass gives the entropies.
TEST(FusedLogp, MatchesFullLogitsUnderATemperatureInFp32) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  expect_parity(at::kFloat, 1e-5, 0.7);
}

TEST(FusedLogp, MatchesFullLogitsUnderATemperatureInBf16) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  expect_parity(at::kBFloat16, 1e-2, 1.3);
}

}  // namespace
}  // namespace st

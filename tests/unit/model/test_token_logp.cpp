// Chunked target-token log-probs against the naive full-logits path: values and gradients, at
// odd sizes, every chunking, ignored targets, fp32 and bf16, under a temperature, and the
// entropies the same pass computes.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include "model/token_logp.h"

namespace st {
namespace {

struct Inputs {
  at::Tensor hidden, weight, targets, upstream;
};

Inputs make_inputs(int64_t tokens, int64_t hidden_size, int64_t vocab, at::ScalarType dtype) {
  at::manual_seed(3);
  Inputs in;
  in.hidden = at::randn({tokens, hidden_size}).to(dtype).set_requires_grad(true);
  in.weight = (at::randn({vocab, hidden_size}) * 0.3).to(dtype).set_requires_grad(true);
  in.targets = at::randint(vocab, {tokens}, at::kLong);
  in.targets.index_put_({at::arange(0, tokens, 5)}, kIgnoreTarget);  // every 5th ignored
  in.upstream = at::randn({tokens});  // a non-uniform upstream gradient
  return in;
}

// Returns {logps, d hidden, d weight}.
std::vector<at::Tensor> evaluate(const Inputs& in, const std::function<at::Tensor()>& logps) {
  in.hidden.mutable_grad() = at::Tensor();
  in.weight.mutable_grad() = at::Tensor();
  const at::Tensor out = logps();
  torch::autograd::backward({(out * in.upstream).sum()});
  return {out.detach(), in.hidden.grad().clone(), in.weight.grad().clone()};
}

TEST(TokenLogp, ChunkedMatchesFullLogitsAtEveryChunking) {
  const Inputs in = make_inputs(597, 43, 211, at::kDouble);
  const auto expected = evaluate(in, [&] {
    return full_logits_token_logps(in.hidden, in.weight, in.targets);
  });
  for (int64_t chunk : {1, 7, 64, 596, 597, 10000}) {
    const auto got = evaluate(in, [&] {
      return chunked_token_logps(in.hidden, in.weight, in.targets, chunk);
    });
    EXPECT_TRUE(at::allclose(got[0], expected[0], 1e-6, 1e-6)) << "chunk " << chunk;
    EXPECT_TRUE(at::allclose(got[1], expected[1], 1e-6, 1e-6)) << "chunk " << chunk;
    EXPECT_TRUE(at::allclose(got[2], expected[2], 1e-6, 1e-6)) << "chunk " << chunk;
  }
}

TEST(TokenLogp, IgnoredTargetsScoreZeroAndGetNoGradient) {
  const Inputs in = make_inputs(20, 8, 31, at::kFloat);
  const auto got = evaluate(in, [&] {
    return chunked_token_logps(in.hidden, in.weight, in.targets, 6);
  });
  for (int64_t t = 0; t < 20; t += 5) {
    EXPECT_EQ(got[0][t].item<float>(), 0.0f);
    EXPECT_EQ(got[1][t].abs().sum().item<float>(), 0.0f);
  }
  EXPECT_LT(got[0][1].item<float>(), 0.0f);
}

TEST(TokenLogp, Bf16ReducesInFp32LikeTheNaivePath) {
  const Inputs in = make_inputs(97, 32, 1000, at::kBFloat16);
  const auto expected = evaluate(in, [&] {
    return full_logits_token_logps(in.hidden, in.weight, in.targets);
  });
  const auto got = evaluate(in, [&] {
    return chunked_token_logps(in.hidden, in.weight, in.targets, 13);
  });
  EXPECT_EQ(got[0].scalar_type(), at::kFloat);
  EXPECT_TRUE(at::allclose(got[0], expected[0], 1e-5, 1e-5));
  EXPECT_EQ(got[1].scalar_type(), at::kBFloat16);
  // bf16 gradients: rounding of per-chunk partial sums differs from one big matmul.
  EXPECT_TRUE(at::allclose(got[1].to(at::kFloat), expected[1].to(at::kFloat), 2e-2, 2e-3));
  EXPECT_TRUE(at::allclose(got[2].to(at::kFloat), expected[2].to(at::kFloat), 2e-2, 2e-3));
}

// The weight gradient written into a sink (fp32, summed inside the matmul) equals autograd's,
// overwriting on the first contribution and adding after; fp32 and bf16 weights.
TEST(TokenLogp, WeightGradientSinkWritesThenAddsWhatAutogradWouldReturn) {
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    const Inputs in = make_inputs(61, 16, 97, dtype);
    const auto expected = evaluate(in, [&] { return chunked_token_logps(in.hidden, in.weight, in.targets, 9); });
    const at::Tensor weight = in.weight.detach();  // the sink replaces its autograd gradient
    const at::Tensor sink = at::full({97, 16}, 123.0f);  // stale values: the first write must replace them
    for (const bool overwrite : {true, false}) {
      in.hidden.mutable_grad() = at::Tensor();
      const at::Tensor out = chunked_token_logps(in.hidden, weight, in.targets, 9, {sink, overwrite});
      torch::autograd::backward({(out * in.upstream).sum()});
      EXPECT_TRUE(at::allclose(in.hidden.grad().to(at::kFloat), expected[1].to(at::kFloat), 1e-5, 1e-6));
    }
    // Written once, then added once: twice the gradient, never rounded to the weights' dtype.
    const double tolerance = dtype == at::kFloat ? 1e-5 : 2e-2;
    EXPECT_TRUE(at::allclose(sink, 2 * expected[2].to(at::kFloat), tolerance, tolerance * 0.1))
        << c10::toString(dtype) << ": max difference " << (sink - 2 * expected[2].to(at::kFloat)).abs().max().item<float>();
  }
}

TEST(TokenLogp, AnEmptyBatchOverwritesTheSinkWithZeros) {
  const at::Tensor hidden = at::zeros({0, 8}).requires_grad_(true);
  const at::Tensor sink = at::ones({10, 8});
  const at::Tensor out = chunked_token_logps(hidden, at::randn({10, 8}), at::zeros({0}, at::kLong), 4, {sink, true});
  torch::autograd::backward({out.sum() + (hidden.sum() * 0.0)});
  EXPECT_EQ(sink.abs().sum().item<float>(), 0.0f);
}

// GRPO scores completions at the sampling temperature: log_softmax(logits / T). Both paths in
// float64, each value a sum of V = 211 terms in another order: they differ by a few hundred units
// of 2^-53 (~1e-14 relative); 1e-12 leaves a 50x margin and still fails any missed 1/T factor.
TEST(TokenLogp, TemperedLogpsAndGradientsEqualTheFullLogitsOverTemperature) {
  const Inputs in = make_inputs(597, 43, 211, at::kDouble);
  for (const double temperature : {0.3, 0.7, 1.9}) {
    const auto expected = evaluate(in, [&] { return full_logits_token_logps(in.hidden, in.weight, in.targets, temperature); });
    for (const int64_t chunk : {7, 597}) {
      TokenLogpOptions options;
      options.chunk_tokens = chunk;
      options.temperature = temperature;
      const auto got = evaluate(in, [&] { return chunked_token_logps(in.hidden, in.weight, in.targets, options).logps; });
      for (size_t i = 0; i < 3; ++i) {
        EXPECT_TRUE(at::allclose(got[i], expected[i], 1e-12, 1e-12))
            << "T " << temperature << ", chunk " << chunk << ", output " << i << ": max difference "
            << (got[i] - expected[i]).abs().max().item<double>();
      }
    }
  }
  // The temperature reaches the values: T = 0.7 is not T = 1.
  const at::Tensor plain = full_logits_token_logps(in.hidden, in.weight, in.targets);
  EXPECT_GT((full_logits_token_logps(in.hidden, in.weight, in.targets, 0.7) - plain).abs().max().item<double>(), 0.1);
}

// Entropies of the tempered softmax, -sum p log p per position (TRL's entropy_from_logits), from
// the same pass: against the full softmax in float64 (the bound argued above), detached, and
// leaving the log-probs' values and gradients as they are without them.
TEST(TokenLogp, EntropiesAreTheTemperedSoftmaxEntropiesAndCarryNoGradient) {
  const Inputs in = make_inputs(101, 24, 173, at::kDouble);
  const double temperature = 0.6;
  const at::Tensor logits = at::matmul(in.hidden.detach(), in.weight.detach().t()) / temperature;
  const at::Tensor expected = -(at::softmax(logits, -1) * at::log_softmax(logits, -1)).sum(-1);
  TokenLogpOptions options;
  options.chunk_tokens = 17;
  options.temperature = temperature;
  const auto without = evaluate(in, [&] { return chunked_token_logps(in.hidden, in.weight, in.targets, options).logps; });
  options.entropies = true;
  TokenLogps out;
  const auto with = evaluate(in, [&] {
    out = chunked_token_logps(in.hidden, in.weight, in.targets, options);
    return out.logps;
  });
  ASSERT_TRUE(out.entropies.defined());
  EXPECT_FALSE(out.entropies.requires_grad());
  EXPECT_TRUE(at::allclose(out.entropies, expected, 1e-12, 1e-12))
      << "max difference " << (out.entropies - expected).abs().max().item<double>();
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(at::equal(with[i], without[i])) << "output " << i;
  options.entropies = false;
  EXPECT_FALSE(chunked_token_logps(in.hidden, in.weight, in.targets, options).entropies.defined());
}

TEST(TokenLogp, ShapeErrorsAreReported) {
  const at::Tensor hidden = at::randn({4, 8});
  EXPECT_ANY_THROW(chunked_token_logps(hidden, at::randn({10, 9}), at::zeros({4}, at::kLong), 2));
  EXPECT_ANY_THROW(chunked_token_logps(hidden, at::randn({10, 8}), at::zeros({5}, at::kLong), 2));
  EXPECT_ANY_THROW(chunked_token_logps(hidden, at::randn({10, 8}), at::zeros({4}, at::kLong), 0));
  EXPECT_ANY_THROW(chunked_token_logps(hidden, at::randn({10, 8}), at::zeros({4}, at::kLong), 2,
                                       {at::zeros({10, 8}, at::kDouble), true}));
  TokenLogpOptions frozen;
  frozen.temperature = 0.0;  // a sampling temperature of 0 is greedy: nothing to score it with
  EXPECT_ANY_THROW(chunked_token_logps(hidden, at::randn({10, 8}), at::zeros({4}, at::kLong), frozen));
}

}  // namespace
}  // namespace st

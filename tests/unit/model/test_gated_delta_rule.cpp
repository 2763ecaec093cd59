// The gated delta rule computed in chunks (Gated DeltaNet, model/gated_delta_rule.h) against its
// token-by-token definition, in float64: outputs, final states and every input's gradient, at
// lengths around and across the chunk; a sequence split with its state carried equals the
// unsplit one. Bound: float64 rounding (unit 1.1e-16) over sums of at most a few thousand terms of
// magnitude <= 1 (L2-normalised keys, beta < 1, decays <= 1) stays below 1e-12 relative to the
// values' scale; 1e-10 is 100x over it (measured: at most 1.3e-15, OpenBLAS on this VM). A sign
// flipped in the UT transform fails all four cases.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "model/gated_delta_rule.h"

namespace st {
namespace {

constexpr double kBound = 1e-10;

GatedDeltaInputs random_inputs(int64_t batch, int64_t heads, int64_t length, int64_t key_dim, int64_t value_dim,
                               uint64_t seed, bool with_state) {
  at::manual_seed(seed);
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  GatedDeltaInputs in;
  const at::Tensor q = at::randn({batch, heads, length, key_dim}, f64);
  const at::Tensor k = at::randn({batch, heads, length, key_dim}, f64);
  in.q = q / q.norm(2, -1, true) * std::pow(static_cast<double>(key_dim), -0.5);
  in.k = k / k.norm(2, -1, true);
  in.v = at::randn({batch, heads, length, value_dim}, f64);
  in.g = -at::rand({batch, heads, length}, f64) * 0.5 - 0.01;  // decays exp(g) in (0.6, 0.99)
  in.beta = at::rand({batch, heads, length}, f64) * 0.9 + 0.05;
  if (with_state) in.initial_state = at::randn({batch, heads, key_dim, value_dim}, f64) * 0.3;
  return in;
}

double relative(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>() / std::max(b.abs().max().item<double>(), 1e-30);
}

TEST(GatedDeltaRule, ChunkedEqualsTheRecurrenceAroundAndAcrossTheChunk) {
  for (const int64_t length : {1, 63, 64, 65, 150}) {
    for (const bool with_state : {false, true}) {
      const GatedDeltaInputs in = random_inputs(2, 3, length, 8, 5, 7 + length, with_state);
      const GatedDeltaOutputs chunked = gated_delta_rule_chunked(in, 64);
      const GatedDeltaOutputs recurrent = gated_delta_rule_recurrent(in);
      EXPECT_LE(relative(chunked.out, recurrent.out), kBound) << "length " << length;
      EXPECT_LE(relative(chunked.final_state, recurrent.final_state), kBound) << "length " << length;
    }
  }
  // Another chunk size gives the same values.
  const GatedDeltaInputs in = random_inputs(1, 2, 37, 4, 6, 3, true);
  EXPECT_LE(relative(gated_delta_rule_chunked(in, 8).out, gated_delta_rule_recurrent(in).out), kBound);
}

TEST(GatedDeltaRule, EveryGradientEqualsTheRecurrences) {
  GatedDeltaInputs in = random_inputs(1, 2, 70, 4, 3, 11, true);
  std::vector<at::Tensor*> leaves = {&in.q, &in.k, &in.v, &in.g, &in.beta, &in.initial_state};
  const at::Tensor weight_out = at::randn({1, 2, 70, 3}, at::kDouble);
  const at::Tensor weight_state = at::randn({1, 2, 4, 3}, at::kDouble);
  const auto gradients = [&](bool chunked) {
    for (at::Tensor* leaf : leaves) *leaf = leaf->detach().requires_grad_(true);
    const GatedDeltaOutputs o = chunked ? gated_delta_rule_chunked(in, 16) : gated_delta_rule_recurrent(in);
    ((o.out * weight_out).sum() + (o.final_state * weight_state).sum()).backward();
    std::vector<at::Tensor> grads;
    for (at::Tensor* leaf : leaves) grads.push_back(leaf->grad().clone());
    return grads;
  };
  const std::vector<at::Tensor> chunked = gradients(true), recurrent = gradients(false);
  const char* names[] = {"q", "k", "v", "g", "beta", "initial_state"};
  for (size_t i = 0; i < chunked.size(); ++i) EXPECT_LE(relative(chunked[i], recurrent[i]), kBound) << names[i];
}

TEST(GatedDeltaRule, ASequenceSplitWithItsStateCarriedEqualsTheWhole) {
  const GatedDeltaInputs whole = random_inputs(2, 2, 100, 6, 4, 5, false);
  const GatedDeltaOutputs reference = gated_delta_rule_chunked(whole, 64);
  const GatedDeltaOutputs first = gated_delta_rule_chunked(token_range(whole, 0, 37), 64);
  const GatedDeltaOutputs second = gated_delta_rule_chunked(token_range(whole, 37, 63, first.final_state), 64);
  EXPECT_LE(relative(at::cat({first.out, second.out}, 2), reference.out), kBound);
  EXPECT_LE(relative(second.final_state, reference.final_state), kBound);
}

TEST(GatedDeltaRule, Float32InputsComputeInFloat32AndKeepTheirDtype) {
  const GatedDeltaInputs f64 = random_inputs(1, 2, 65, 4, 4, 9, false);
  GatedDeltaInputs f32 = f64;
  for (at::Tensor* t : {&f32.q, &f32.k, &f32.v, &f32.g, &f32.beta}) *t = t->to(at::kFloat);
  const GatedDeltaOutputs out = gated_delta_rule_chunked(f32, 64);
  EXPECT_EQ(out.out.scalar_type(), at::kFloat);
  EXPECT_EQ(out.final_state.scalar_type(), at::kFloat);
  // fp32's rounding (unit 6e-8) over the same sums: within 1e-4 of the float64 values (measured
  // 5.0e-7).
  EXPECT_LE(relative(out.out.to(at::kDouble), gated_delta_rule_recurrent(f64).out), 1e-4);
}

}  // namespace
}  // namespace st

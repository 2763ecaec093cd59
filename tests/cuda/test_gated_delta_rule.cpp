// cuda/gated_delta_rule's kernels (what gated_delta_rule() runs for CUDA fp32 inputs) against
// the float64 token-by-token definition: outputs, final state and every input's gradient, no
// farther from it than 10x what the CPU path (libtorch's fp32 chunked rule, the same algorithm
// in the same precision) is, in the same run. Lengths around and across the 64-token chunk, two
// value blocks (37 columns), packed rows (one launch, each sequence from zeros), and Qwen3.5's
// head dims (128 x 128). Skipped without a GPU and a
// CUDA libtorch; the programs' arithmetic is checked on the host in every tier
// (tests/unit/model/test_gated_delta_programs.cpp).
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/gated_delta_kernel.h"
#include "model/gated_delta_rule.h"

namespace st {
namespace {

using Results = std::vector<at::Tensor>;  // out, final_state, then q, k, v, g, beta, initial_state's grads
const char* const kNames[] = {"out", "final_state", "q", "k", "v", "g", "beta", "initial_state"};

GatedDeltaInputs on(const GatedDeltaInputs& in, at::ScalarType type, at::Device device) {
  GatedDeltaInputs out;
  out.q = in.q.to(device, type), out.k = in.k.to(device, type), out.v = in.v.to(device, type);
  out.g = in.g.to(device, type), out.beta = in.beta.to(device, type);
  if (in.initial_state.defined()) out.initial_state = in.initial_state.to(device, type);
  return out;
}

Results run(GatedDeltaInputs in, const at::Tensor& weight_out, const at::Tensor& weight_state, bool recurrent) {
  std::vector<at::Tensor*> leaves = {&in.q, &in.k, &in.v, &in.g, &in.beta, &in.initial_state};
  for (at::Tensor* leaf : leaves) {
    if (leaf->defined()) *leaf = leaf->detach().clone().requires_grad_(true);
  }
  const GatedDeltaOutputs o = recurrent ? gated_delta_rule_recurrent(in) : gated_delta_rule(in, 64);
  const auto like = [](const at::Tensor& w, const at::Tensor& t) { return w.to(t.device(), t.scalar_type()); };
  ((o.out * like(weight_out, o.out)).sum() + (o.final_state * like(weight_state, o.final_state)).sum()).backward();
  Results results = {o.out.detach().cpu(), o.final_state.detach().cpu()};
  for (at::Tensor* leaf : leaves) results.push_back(leaf->defined() ? leaf->grad().cpu() : at::Tensor());
  return results;
}

double relative(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor judge = b.to(at::kDouble);
  return (a.to(at::kDouble) - judge).abs().max().item<double>() / std::max(judge.abs().max().item<double>(), 1e-30);
}

void expect_as_close_as_the_cpu_path(int64_t heads, int64_t length, int64_t key_dim, int64_t value_dim,
                                     bool with_state, uint64_t seed) {
  at::manual_seed(seed);
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  GatedDeltaInputs in;
  const at::Tensor q = at::randn({2, heads, length, key_dim}, f64), k = at::randn({2, heads, length, key_dim}, f64);
  in.q = q / q.norm(2, -1, true) * std::pow(static_cast<double>(key_dim), -0.5);
  in.k = k / k.norm(2, -1, true);
  in.v = at::randn({2, heads, length, value_dim}, f64);
  in.g = -at::rand({2, heads, length}, f64) * 0.5 - 0.01;
  in.beta = at::rand({2, heads, length}, f64) * 0.9 + 0.05;
  if (with_state) in.initial_state = at::randn({2, heads, key_dim, value_dim}, f64) * 0.3;
  const at::Tensor weight_out = at::randn(in.v.sizes(), f64);
  const at::Tensor weight_state = at::randn({2, heads, key_dim, value_dim}, f64);

  const GatedDeltaInputs gpu = on(in, at::kFloat, at::kCUDA);
  ASSERT_TRUE(gated_delta_kernel_applies(gpu));
  const Results judge = run(in, weight_out, weight_state, true);
  const Results cpu_path = run(on(in, at::kFloat, at::kCPU), weight_out, weight_state, false);
  const Results kernels = run(gpu, weight_out, weight_state, false);
  const std::string where = "length " + std::to_string(length) + ", dims " + std::to_string(key_dim) + "x" +
                            std::to_string(value_dim) + (with_state ? ", from a state" : "");
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (!judge[i].defined()) continue;
    const double peer = relative(cpu_path[i], judge[i]), ours = relative(kernels[i], judge[i]);
    EXPECT_LE(ours, 10 * peer) << kNames[i] << ", " << where << ": kernels " << ours << ", CPU fp32 " << peer;
  }
}

TEST(GatedDeltaKernels, AsCloseToFloat64AsTheCpuPathAroundAndAcrossTheChunk) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  for (const int64_t length : {1, 63, 64, 65, 150}) {
    for (const bool with_state : {false, true}) expect_as_close_as_the_cpu_path(3, length, 16, 37, with_state, length);
  }
}

// Packed rows in one launch: each sequence from a zero state, judged by each sequence's own
// float64 recurrence, beside the CPU path's packed rule.
TEST(GatedDeltaKernels, PackedRowsAsCloseToEachSequencesRecurrenceAsTheCpuPath) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  const std::vector<int64_t> starts = {0, 1, 64, 134, 150};
  at::manual_seed(8);
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  GatedDeltaInputs in;
  const at::Tensor q = at::randn({1, 4, 150, 16}, f64), k = at::randn({1, 4, 150, 16}, f64);
  in.q = q / q.norm(2, -1, true) * 0.25;
  in.k = k / k.norm(2, -1, true);
  in.v = at::randn({1, 4, 150, 37}, f64);
  in.g = -at::rand({1, 4, 150}, f64) * 0.5 - 0.01;
  in.beta = at::rand({1, 4, 150}, f64) * 0.9 + 0.05;
  const at::Tensor weight = at::randn(in.v.sizes(), f64);
  const auto packed = [&](GatedDeltaInputs x, bool recurrent) {
    std::vector<at::Tensor*> leaves = {&x.q, &x.k, &x.v, &x.g, &x.beta};
    for (at::Tensor* leaf : leaves) *leaf = leaf->detach().clone().requires_grad_(true);
    const at::Tensor out = recurrent ? gated_delta_rule_recurrent(x, &starts).out : gated_delta_rule(x, 64, &starts).out;
    (out * weight.to(out.device(), out.scalar_type())).sum().backward();
    Results results = {out.detach().cpu()};
    for (at::Tensor* leaf : leaves) results.push_back(leaf->grad().cpu());
    return results;
  };
  const Results judge = packed(in, true), cpu_path = packed(on(in, at::kFloat, at::kCPU), false);
  const Results kernels = packed(on(in, at::kFloat, at::kCUDA), false);
  const char* names[] = {"out", "q", "k", "v", "g", "beta"};
  for (size_t i = 0; i < kernels.size(); ++i) {
    const double peer = relative(cpu_path[i], judge[i]), ours = relative(kernels[i], judge[i]);
    EXPECT_LE(ours, 10 * peer) << names[i] << ": kernels " << ours << ", CPU fp32 " << peer;
  }
}

TEST(GatedDeltaKernels, AsCloseToFloat64AsTheCpuPathAtQwen35HeadDims) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  expect_as_close_as_the_cpu_path(4, 300, 128, 128, true, 3);
}

}  // namespace
}  // namespace st

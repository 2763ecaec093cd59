// One Gated DeltaNet layer (model/gated_delta_mixer.h) forward and backward in fp32, on the CPU
// or the GPU: milliseconds per pass and tokens/s, the figures bench/gated_delta.sh prints next to
// transformers' own torch path (Qwen3_5GatedDeltaNet without the FLA kernels) on the same shape,
// device and tokens. On the GPU also the rule alone both ways in the same run: cuda/'s kernels
// (what the layer runs) and the chunked libtorch ops (the CPU path, transformers' algorithm).
// Usage: bench_gated_delta [tokens=2048] [hidden=1024] [key_heads=4] [value_heads=8] [head_dim=128] [reps=3]
//                          [device=cpu|cuda]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/gated_delta_kernel.h"
#include "model/gated_delta_mixer.h"
#include "model/gated_delta_rule.h"
#include "util/timer.h"

namespace {

using namespace st;

int64_t arg(int argc, char** argv, int index, int64_t fallback) {
  return argc > index ? std::atoll(argv[index]) : fallback;
}

// The median of `reps` timed passes after one to warm up; `pass` ends by reading a value back, so
// a GPU's queue has drained.
template <typename Pass>
double median_seconds(int reps, const Pass& pass) {
  std::vector<double> seconds;
  for (int rep = 0; rep <= reps; ++rep) {
    const Timer timer;
    pass();
    if (rep > 0) seconds.push_back(timer.seconds());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

// The rule alone, forward and backward, on the layer's head shape: kernels vs libtorch ops.
void time_the_rule(const GatedDeltaShape& s, int64_t tokens, int reps, const at::TensorOptions& options) {
  GatedDeltaInputs in;
  const at::Tensor q = at::randn({1, s.value_heads, tokens, s.key_head_dim}, options);
  const at::Tensor k = at::randn({1, s.value_heads, tokens, s.key_head_dim}, options);
  in.q = (q / q.norm(2, -1, true) * std::pow(static_cast<double>(s.key_head_dim), -0.5)).requires_grad_(true);
  in.k = (k / k.norm(2, -1, true)).requires_grad_(true);
  in.v = at::randn({1, s.value_heads, tokens, s.value_head_dim}, options).requires_grad_(true);
  in.g = (-at::rand({1, s.value_heads, tokens}, options) * 0.5 - 0.01).requires_grad_(true);
  in.beta = (at::rand({1, s.value_heads, tokens}, options) * 0.9 + 0.05).requires_grad_(true);
  const auto pass = [&](bool kernels) {
    return [&, kernels] {
      const GatedDeltaOutputs o =
          kernels ? gated_delta_rule_kernel(in, s.chunk) : gated_delta_rule_chunked(in, s.chunk);
      o.out.sum().backward();
      (void)in.g.grad().sum().item<float>();
    };
  };
  const double kernels = median_seconds(reps, pass(true)), ops = median_seconds(reps, pass(false));
  std::printf("shardtune  gated_delta_rule fwd+bwd on %lld value heads x %lld tokens: kernels %.2f ms, "
              "libtorch ops %.2f ms (%.1fx)\n",
              static_cast<long long>(s.value_heads), static_cast<long long>(tokens), kernels * 1e3, ops * 1e3,
              ops / kernels);
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t tokens = arg(argc, argv, 1, 2048), hidden = arg(argc, argv, 2, 1024);
  GatedDeltaShape s;
  s.key_heads = arg(argc, argv, 3, 4);
  s.value_heads = arg(argc, argv, 4, 8);
  s.key_head_dim = s.value_head_dim = arg(argc, argv, 5, 128);
  const int reps = static_cast<int>(arg(argc, argv, 6, 3));
  const bool gpu = argc > 7 && std::string(argv[7]) == "cuda";
  const at::TensorOptions options = at::TensorOptions(at::kFloat).device(gpu ? at::kCUDA : at::kCPU);
  at::manual_seed(0);
  const auto weight = [&](std::vector<int64_t> shape, double scale) {
    return (at::randn(shape, options) * scale).requires_grad_(true);
  };
  GatedDeltaWeights w{weight({s.conv_channels(), hidden}, 0.02), weight({s.value_dim(), hidden}, 0.02),
                      weight({s.value_heads, hidden}, 0.02),     weight({s.value_heads, hidden}, 0.02),
                      weight({s.conv_channels(), 1, s.conv_kernel}, 0.2), weight({s.value_heads}, 0.1),
                      weight({s.value_heads}, 0.5),              weight({s.value_head_dim}, 0.1),
                      weight({hidden, s.value_dim()}, 0.02),     ProjectionDelta{}};
  const at::Tensor x = at::randn({1, tokens, hidden}, options).requires_grad_(true);
  const double median = median_seconds(reps, [&] {
    gated_delta_mixer(x, w, s).sum().backward();
    (void)x.grad().sum().item<float>();
  });
  std::printf("shardtune  gated_delta_mixer fwd+bwd: %lld tokens, hidden %lld, %lld key / %lld value heads of %lld, "
              "%s: %.1f ms (%.0f tokens/s)\n",
              static_cast<long long>(tokens), static_cast<long long>(hidden), static_cast<long long>(s.key_heads),
              static_cast<long long>(s.value_heads), static_cast<long long>(s.key_head_dim),
              gpu ? "GPU" : (std::to_string(at::get_num_threads()) + " threads").c_str(), median * 1e3,
              static_cast<double>(tokens) / median);
  if (gpu) time_the_rule(s, tokens, reps, options);
  return 0;
}

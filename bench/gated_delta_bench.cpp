// One Gated DeltaNet layer (model/gated_delta_mixer.h) forward and backward on the CPU, fp32:
// milliseconds per pass and tokens/s, the figures bench/gated_delta.sh prints next to
// transformers' own torch path (Qwen3_5GatedDeltaNet without the FLA kernels) on the same shape,
// threads and tokens.
// Usage: bench_gated_delta [tokens=2048] [hidden=1024] [key_heads=4] [value_heads=8] [head_dim=128] [reps=3]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "model/gated_delta_mixer.h"
#include "util/timer.h"

namespace {

using namespace st;

int64_t arg(int argc, char** argv, int index, int64_t fallback) {
  return argc > index ? std::atoll(argv[index]) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t tokens = arg(argc, argv, 1, 2048), hidden = arg(argc, argv, 2, 1024);
  GatedDeltaShape s;
  s.key_heads = arg(argc, argv, 3, 4);
  s.value_heads = arg(argc, argv, 4, 8);
  s.key_head_dim = s.value_head_dim = arg(argc, argv, 5, 128);
  const int reps = static_cast<int>(arg(argc, argv, 6, 3));
  at::manual_seed(0);
  const auto weight = [](std::vector<int64_t> shape, double scale) {
    return (at::randn(shape) * scale).requires_grad_(true);
  };
  GatedDeltaWeights w{weight({s.conv_channels(), hidden}, 0.02), weight({s.value_dim(), hidden}, 0.02),
                      weight({s.value_heads, hidden}, 0.02),     weight({s.value_heads, hidden}, 0.02),
                      weight({s.conv_channels(), 1, s.conv_kernel}, 0.2), weight({s.value_heads}, 0.1),
                      weight({s.value_heads}, 0.5),              weight({s.value_head_dim}, 0.1),
                      weight({hidden, s.value_dim()}, 0.02),     ProjectionDelta{}};
  const at::Tensor x = at::randn({1, tokens, hidden}).requires_grad_(true);
  std::vector<double> seconds;
  for (int rep = 0; rep <= reps; ++rep) {  // rep 0 warms up
    const Timer timer;
    const at::Tensor out = gated_delta_mixer(x, w, s);
    out.sum().backward();
    if (rep > 0) seconds.push_back(timer.seconds());
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  std::printf("shardtune  gated_delta_mixer fwd+bwd: %lld tokens, hidden %lld, %lld key / %lld value heads of %lld, "
              "%d threads: %.1f ms (%.0f tokens/s)\n",
              static_cast<long long>(tokens), static_cast<long long>(hidden), static_cast<long long>(s.key_heads),
              static_cast<long long>(s.value_heads), static_cast<long long>(s.key_head_dim), at::get_num_threads(),
              median * 1e3, static_cast<double>(tokens) / median);
  return 0;
}

// The optimizer update alone on one host thread, per element, and the state it keeps: fp32
// AdamW (the baseline) next to the 8-bit AdamW (dequantize, update, recode per block of 256),
// the same shard and gradients. What optim.offload = cpu pays per step for each.
// Usage: bench_optimizer_update [elements=4194304] [steps=5]
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "optim/sharded_adamw.h"
#include "util/timer.h"

namespace {

using namespace st;

struct Figures {
  double ns_per_element = 0.0;
  double state_bytes_per_element = 0.0;
};

Figures measure(OptimizerName name, int64_t n, int steps) {
  at::manual_seed(1);
  std::vector<at::Tensor> masters{at::randn({n})};
  const std::vector<at::Tensor> grads{at::randn({n}) * 1e-3};
  OptimOptions options;
  options.name = name;
  options.weight_decay = 0.1;
  ShardedAdamW optimizer(DecayedRanges{{{0, n}}}, options, masters);
  std::vector<double> seconds;
  for (int step = 0; step <= steps; ++step) {  // step 0 warms up
    const Timer timer;
    optimizer.step(masters, grads, 1e-3);
    if (step > 0) seconds.push_back(timer.seconds());
  }
  std::sort(seconds.begin(), seconds.end());
  return {seconds[seconds.size() / 2] / static_cast<double>(n) * 1e9,
          static_cast<double>(optimizer.state_bytes()) / static_cast<double>(n)};
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : int64_t{1} << 22;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 5;
  if (n % 256 != 0 || n <= 0 || steps < 1) {
    std::fprintf(stderr, "usage: bench_optimizer_update [elements, a multiple of 256] [steps >= 1]\n");
    return 2;
  }
  std::printf("%-10s %12s %14s %22s\n", "optimizer", "elements", "ns/element", "state bytes/element");
  for (OptimizerName name : {OptimizerName::adamw, OptimizerName::adamw8bit}) {
    const Figures figures = measure(name, n, steps);
    std::printf("%-10s %12lld %14.2f %22.3f\n", enum_name(name), static_cast<long long>(n), figures.ns_per_element,
                figures.state_bytes_per_element);
  }
  return 0;
}

// Peak memory and time of target-token log-probs (forward + backward) for the naive path
// (full [tokens, vocab] fp32 logits, log_softmax, gather) next to lib/model's chunked path, on
// the same inputs in the same run.
// Usage: bench_logp_memory [--vocab 128256] [--tokens 4096] [--hidden 2048] [--chunk 1024]
//                          [--dtype fp32|bf16] [--device cpu|cuda]
// Memory: CUDA = peak of the caching allocator; CPU = peak resident set (VmHWM, reset through
// /proc/self/clear_refs), both above what the inputs already hold.
#include <ATen/ATen.h>
#include <malloc.h>
#include <torch/csrc/autograd/autograd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>

#include "model/token_logp.h"
#include "util/device.h"
#include "util/host_memory.h"
#include "util/timer.h"
#include "util/torch_compat.h"

namespace {

struct Measurement {
  double seconds;
  double peak_gib;
};

// Runs `step` once to warm up, then once measured. `step` reads a value back (which waits for
// queued GPU work) and frees what it made, so peaks count everything the path allocates,
// its weight gradient included.
Measurement measure(const c10::Device& device, const std::function<void()>& step) {
  step();
  int64_t baseline = 0;
  if (device.is_cuda()) {
    st::compat::reset_peak_gpu_memory(device.index());
    baseline = st::compat::peak_gpu_memory_bytes(device.index());
  } else {
    st::reset_peak_resident();
    baseline = st::resident_bytes();
  }
  const st::Timer timer;
  step();
  const double seconds = timer.seconds();
  const int64_t peak = device.is_cuda() ? st::compat::peak_gpu_memory_bytes(device.index())
                                        : st::peak_resident_bytes();
  return {seconds, (peak - baseline) / double(1 << 30)};
}

}  // namespace

int main(int argc, char** argv) {
  // Large blocks straight from/to the kernel, so freed memory leaves the resident set and one
  // path's peak cannot hide in memory cached from the other's.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
  std::map<std::string, std::string> args = {{"vocab", "128256"}, {"tokens", "4096"},
                                             {"hidden", "2048"},  {"chunk", "1024"},
                                             {"dtype", "fp32"},   {"device", "auto"}};
  for (int i = 1; i + 1 < argc; i += 2) args[std::string(argv[i]).substr(2)] = argv[i + 1];
  const int64_t vocab = std::atoll(args["vocab"].c_str());
  const int64_t tokens = std::atoll(args["tokens"].c_str());
  const int64_t hidden_size = std::atoll(args["hidden"].c_str());
  const int64_t chunk = std::atoll(args["chunk"].c_str());
  const c10::Device device = st::select_device(st::parse_enum<st::DeviceChoice>(args["device"], "--device"), 0);
  const auto options = at::TensorOptions().device(device).dtype(
      args["dtype"] == "bf16" ? at::kBFloat16 : at::kFloat);

  const at::Tensor hidden = (at::randn({tokens, hidden_size}, options) * 0.5).set_requires_grad(true);
  const at::Tensor weight = (at::randn({vocab, hidden_size}, options) * 0.02).set_requires_grad(true);
  const at::Tensor targets = at::randint(vocab, {tokens}, at::TensorOptions().dtype(at::kLong).device(device));
  const double logits_gib = double(tokens) * vocab * 4 / (1 << 30);
  std::printf("token log-probs, forward + backward: %lld tokens x vocab %lld, hidden %lld, %s on %s\n"
              "(one fp32 [tokens, vocab] logits tensor = %.2f GiB; peaks exclude the inputs)\n",
              (long long)tokens, (long long)vocab, (long long)hidden_size, args["dtype"].c_str(),
              device.str().c_str(), logits_gib);
  std::printf("%-28s %14s %10s\n", "path", "peak memory", "time");

  auto run = [&](const char* name, const std::function<at::Tensor()>& logps) {
    const Measurement m = measure(device, [&] {
      torch::autograd::backward({-logps().mean()});
      (void)hidden.grad().sum().item<float>();
      hidden.mutable_grad() = at::Tensor();  // so the baseline holds only the inputs
      weight.mutable_grad() = at::Tensor();
    });
    std::printf("%-28s %10.2f GiB %8.3f s\n", name, m.peak_gib, m.seconds);
  };
  run("full logits (naive)", [&] { return st::full_logits_token_logps(hidden, weight, targets); });
  run(("chunked, " + std::to_string(chunk) + " tokens").c_str(),
      [&] { return st::chunked_token_logps(hidden, weight, targets, chunk); });
  return 0;
}

#include "util/host_sync.h"

#include <ATen/ATen.h>

#include <atomic>

namespace st {
namespace {

std::atomic<int64_t> reads{0};

}  // namespace

at::Tensor to_device_async(const at::Tensor& host, const at::Device& device) {
  if (host.device() == device) return host;
  if (!device.is_cuda() || !host.is_cpu()) return host.to(device);
  return host.pin_memory().to(device, /*non_blocking=*/true);
}

at::Tensor read_to_host(const at::Tensor& tensor) {
  reads.fetch_add(1, std::memory_order_relaxed);
  return tensor.cpu();
}

int64_t host_reads() { return reads.load(std::memory_order_relaxed); }

}  // namespace st

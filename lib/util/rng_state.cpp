#include "util/rng_state.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <mutex>

#include "build_config.h"
#if ST_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

namespace st {
namespace {

std::vector<uint8_t> state_bytes(at::Generator generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  const at::Tensor state = generator.get_state().contiguous();
  const auto* bytes = state.data_ptr<uint8_t>();
  return {bytes, bytes + state.numel()};
}

void set_state_bytes(at::Generator generator, const std::vector<uint8_t>& bytes) {
  if (bytes.empty()) return;
  at::Tensor state = at::empty({static_cast<int64_t>(bytes.size())}, at::kByte);
  std::copy(bytes.begin(), bytes.end(), state.data_ptr<uint8_t>());
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

#if ST_TORCH_CUDA
bool has_cuda_generator(int device) { return device >= 0 && at::cuda::is_available(); }
#endif

}  // namespace

RngState capture_rng_state(int cuda_device) {
  RngState state;
  state.cpu = state_bytes(at::detail::getDefaultCPUGenerator());
#if ST_TORCH_CUDA
  if (has_cuda_generator(cuda_device)) {
    state.cuda = state_bytes(at::cuda::detail::getDefaultCUDAGenerator(static_cast<c10::DeviceIndex>(cuda_device)));
  }
#else
  (void)cuda_device;
#endif
  return state;
}

void restore_rng_state(const RngState& state, int cuda_device) {
  set_state_bytes(at::detail::getDefaultCPUGenerator(), state.cpu);
#if ST_TORCH_CUDA
  if (has_cuda_generator(cuda_device)) {
    set_state_bytes(at::cuda::detail::getDefaultCUDAGenerator(static_cast<c10::DeviceIndex>(cuda_device)), state.cuda);
  }
#else
  (void)cuda_device;
#endif
}

}  // namespace st

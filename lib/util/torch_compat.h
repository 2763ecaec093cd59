// The one place where libtorch versions differ: Debian's 1.13 (CPU) in CI and 2.x with CUDA on
// GPU machines. Code elsewhere calls these helpers instead of testing versions itself.
#pragma once

#include <ATen/ATen.h>
#include <torch/version.h>

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include "build_config.h"

#if ST_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#if ST_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace st::compat {

constexpr int kTorchMajor = TORCH_VERSION_MAJOR;
constexpr int kTorchMinor = TORCH_VERSION_MINOR;
// torch.nn.functional.scaled_dot_product_attention exists from 2.0 on.
constexpr bool kHasScaledDotProductAttention = TORCH_VERSION_MAJOR >= 2;

inline std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH) + (ST_TORCH_CUDA ? " (CUDA)" : " (CPU)");
}

// Attention probabilities are summed in fp32 for 16-bit inputs (transformers' eager path) and
// in the inputs' own type otherwise (an fp64 reference stays fp64).
inline at::ScalarType softmax_dtype(const at::Tensor& scores) {
  const at::ScalarType type = scores.scalar_type();
  return type == at::kHalf || type == at::kBFloat16 ? at::kFloat : type;
}

// Causal self-attention, q/k/v [B, H, T, head_dim] with as many k/v heads as q heads. libtorch
// 2.x: scaled_dot_product_attention (flash / memory-efficient kernels on CUDA). 1.13: the
// explicit math path of transformers' eager attention (softmax in fp32, then back).
inline at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
#else
  const int64_t length = q.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * scale;
  const at::Tensor future =
      at::ones({length, length}, q.options().dtype(at::kBool)).triu(1);
  scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  return at::matmul(at::softmax(scores, -1, softmax_dtype(scores)).to(q.scalar_type()), v);
#endif
}

// Self-attention under an explicit mask [B, 1, T, T] (bool, true = attend; every query sees at
// least itself), q/k/v as in causal_attention: packed and prompt-shared rows. libtorch 2.x:
// scaled_dot_product_attention with the mask; 1.13: the same math path as causal_attention.
inline at::Tensor masked_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                   const at::Tensor& mask) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, mask);
#else
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * scale;
  scores = scores.masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity());
  return at::matmul(at::softmax(scores, -1, softmax_dtype(scores)).to(q.scalar_type()), v);
#endif
}

// The flash kernel's variable-length entry point with a sliding window exists from 2.5 on
// (aten::_flash_attention_forward with cumulative offsets; differentiable through autograd).
#if ST_TORCH_CUDA && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5))
#define ST_FLASH_VARLEN 1
#else
#define ST_FLASH_VARLEN 0
#endif
constexpr bool kHasFlashVarlen = ST_FLASH_VARLEN;

// q [Nq, H, d], k/v [Nk, Hkv, d] (bf16/fp16, CUDA), offsets [P + 1] int32 -> [Nq, H, d]: span
// p's queries attend causally to its keys, aligned at the end (flash-attn 2's convention for
// Lq != Lk), within `window` places when > 0. Without the kernel: never called (throws).
inline at::Tensor flash_varlen_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                         const at::Tensor& query_offsets, const at::Tensor& key_offsets,
                                         int64_t longest_query, int64_t longest_key, int64_t window) {
#if ST_FLASH_VARLEN
  std::optional<int64_t> left, right;
  if (window > 0) {
    left = window - 1;
    right = 0;
  }
  return std::get<0>(at::_flash_attention_forward(q, k, v, query_offsets, key_offsets, longest_query, longest_key,
                                                  /*dropout_p=*/0.0, /*is_causal=*/true, /*return_debug_mask=*/false,
                                                  /*scale=*/std::nullopt, left, right));
#else
  (void)q, (void)k, (void)v, (void)query_offsets, (void)key_offsets, (void)longest_query, (void)longest_key,
      (void)window;
  throw std::logic_error("flash_varlen_attention: this libtorch has no flash varlen kernel");
#endif
}

// Grouped GEMM over runs of rows (aten::_grouped_mm, bf16 on CUDA, with autograd) exists from 2.9
// on: a mixture-of-experts layer's experts in one kernel per projection.
#if ST_TORCH_CUDA && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 9))
#define ST_GROUPED_MM 1
#else
#define ST_GROUPED_MM 0
#endif
constexpr bool kHasGroupedMm = ST_GROUPED_MM;

// rows [M, in] in runs, `ends` [G] int32 on the rows' device the end of each run (cumulative, the
// last M), weights [G, out, in] -> [M, out]: run g's rows times weights[g] transposed. Without the
// kernel: never called (throws).
inline at::Tensor grouped_linear(const at::Tensor& rows, const at::Tensor& weights, const at::Tensor& ends) {
#if ST_GROUPED_MM
  return at::_grouped_mm(rows, weights.transpose(-2, -1), ends);
#else
  (void)rows, (void)weights, (void)ends;
  throw std::logic_error("grouped_linear: this libtorch has no grouped GEMM");
#endif
}

// A profiler (Kineto) event's duration in microseconds: durationNs() in newer libtorch, only
// durationUs() in older ones (1.13). Call as profiler_event_us(event, 0).
template <typename Event>
auto profiler_event_us(const Event& event, int) -> decltype(event.durationNs(), double()) {
  return static_cast<double>(event.durationNs()) / 1000.0;
}
template <typename Event>
double profiler_event_us(const Event& event, long) {
  return static_cast<double>(event.durationUs());
}

// Peak bytes the CUDA caching allocator has handed out on `device` since the last reset; 0
// without a CUDA libtorch.
inline void reset_peak_gpu_memory(int device) {
#if ST_TORCH_CUDA
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
#else
  (void)device;
#endif
}
inline int64_t peak_gpu_memory_bytes(int device) {
#if ST_TORCH_CUDA
  const auto stats =
      c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  return stats.allocated_bytes[0].peak;  // StatType::AGGREGATE
#else
  (void)device;
  return 0;
#endif
}

// Bytes the caching allocator holds in tensors on `device` now; 0 without a CUDA libtorch.
inline int64_t allocated_gpu_memory_bytes(int device) {
#if ST_TORCH_CUDA
  const auto stats =
      c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  return stats.allocated_bytes[0].current;
#else
  (void)device;
  return 0;
#endif
}
// Memory a new allocation on `device` could get: the driver's free memory plus what the
// caching allocator has reserved but not handed out; 0 without a CUDA libtorch.
inline int64_t free_gpu_memory_bytes(int device) {
#if ST_TORCH_CUDA
  size_t free = 0, total = 0;
  int previous = 0;
  cudaGetDevice(&previous);
  cudaSetDevice(device);
  cudaMemGetInfo(&free, &total);
  cudaSetDevice(previous);
  const auto stats =
      c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  return static_cast<int64_t>(free) + stats.reserved_bytes[0].current - stats.allocated_bytes[0].current;
#else
  (void)device;
  return 0;
#endif
}

// Waits for the work queued on libtorch's current stream of `device` (the compute stream; a
// communicator's own stream runs on); a no-op on the CPU, where work is synchronous.
inline void synchronize_compute(const at::Device& device) {
#if ST_TORCH_CUDA
  if (device.is_cuda()) c10::cuda::getCurrentCUDAStream(device.index()).synchronize();
#else
  (void)device;
#endif
}

#if ST_HAVE_CUDA
// The stream libtorch is computing on; the legacy default stream when libtorch has no CUDA
// (then no CUDA tensor can exist and the caller works on raw pointers).
inline cudaStream_t current_cuda_stream() {
#if ST_TORCH_CUDA
  return c10::cuda::getCurrentCUDAStream().stream();
#else
  return cudaStreamLegacy;
#endif
}

// Tells the caching allocator that `tensor` is in use on `stream`, so its memory is not handed
// out again before the work queued there has finished.
inline void record_stream(const at::Tensor& tensor, cudaStream_t stream) {
#if ST_TORCH_CUDA
  c10::cuda::CUDACachingAllocator::recordStream(
      tensor.storage().data_ptr(),
      c10::cuda::getStreamFromExternal(stream, tensor.device().index()));
#else
  (void)tensor;
  (void)stream;
#endif
}
#endif

}  // namespace st::compat

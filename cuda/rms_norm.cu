#include "cuda/rms_norm.h"

#include "cuda/device_dtype.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int64_t kRowsPerGroup = 32;  // rows whose weight gradients one block sums

using st_cuda::from_float;
using st_cuda::rounded;
using st_cuda::to_float;

// Block-wide sum; the result is valid in all threads. Fixed order: deterministic.
__device__ float block_sum(float mine) {
  __shared__ float warps[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) mine += __shfl_xor_sync(0xffffffffu, mine, offset);
  __syncthreads();  // warps[] may still be read from the previous call
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = mine;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) total += warps[w];
  return total;
}

// One block per row.
template <typename T>
__global__ void rms_norm_forward_kernel(const T* __restrict__ x, const T* __restrict__ residual,
                                        const T* __restrict__ weight, T* __restrict__ sum, T* __restrict__ out,
                                        float* __restrict__ rstd, int64_t width, float eps) {
  const int64_t row = blockIdx.x;
  const T* x_row = x + row * width;
  float squares = 0.0f;
  for (int64_t c = threadIdx.x; c < width; c += kThreads) {
    float s = to_float(x_row[c]);
    if (residual != nullptr) {
      s = rounded<T>(s + to_float(residual[row * width + c]));
      sum[row * width + c] = from_float<T>(s);
    }
    squares += s * s;
  }
  const float row_rstd = rsqrtf(block_sum(squares) / static_cast<float>(width) + eps);
  if (threadIdx.x == 0) rstd[row] = row_rstd;
  const T* s_row = residual != nullptr ? sum + row * width : x_row;
  for (int64_t c = threadIdx.x; c < width; c += kThreads) {
    const float n = rounded<T>(to_float(s_row[c]) * row_rstd);
    out[row * width + c] = from_float<T>(to_float(weight[c]) * n);
  }
}

// One block per group of kRowsPerGroup rows: each row's input gradient, and the group's
// weight-gradient partial (every thread owns its columns: no atomics).
template <typename T>
__global__ void rms_norm_backward_kernel(const T* __restrict__ grad_out, const T* __restrict__ grad_sum,
                                         const T* __restrict__ input, const T* __restrict__ weight,
                                         const float* __restrict__ rstd, T* __restrict__ grad_input,
                                         float* __restrict__ weight_partials, int64_t rows, int64_t width) {
  const int64_t first = blockIdx.x * kRowsPerGroup;
  const int64_t last = first + kRowsPerGroup < rows ? first + kRowsPerGroup : rows;
  float* partial = weight_partials + blockIdx.x * width;
  for (int64_t c = threadIdx.x; c < width; c += kThreads) partial[c] = 0.0f;
  for (int64_t row = first; row < last; ++row) {
    const int64_t base = row * width;
    const float row_rstd = rstd[row];
    float dot = 0.0f;  // sum over columns of d(normed) * normed
    for (int64_t c = threadIdx.x; c < width; c += kThreads) {
      const float n = to_float(input[base + c]) * row_rstd;
      dot += to_float(grad_out[base + c]) * to_float(weight[c]) * n;
    }
    const float mean_dot = block_sum(dot) / static_cast<float>(width);
    for (int64_t c = threadIdx.x; c < width; c += kThreads) {
      const float n = to_float(input[base + c]) * row_rstd;
      const float dy = to_float(grad_out[base + c]);
      float ds = row_rstd * (dy * to_float(weight[c]) - n * mean_dot);
      if (grad_sum != nullptr) ds += to_float(grad_sum[base + c]);
      grad_input[base + c] = from_float<T>(ds);
      partial[c] += dy * rounded<T>(n);
    }
  }
}

// grad_weight[c] = the groups' partials summed in group order.
template <typename T>
__global__ void sum_partials_kernel(const float* __restrict__ partials, T* __restrict__ grad_weight, int64_t groups,
                                    int64_t width) {
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < width;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float total = 0.0f;
    for (int64_t g = 0; g < groups; ++g) total += partials[g * width + c];
    grad_weight[c] = from_float<T>(total);
  }
}

template <typename T>
void launch_forward(const void* x, const void* residual, const void* weight, void* sum, void* out, float* rstd,
                    int64_t rows, int64_t width, float eps, cudaStream_t stream) {
  rms_norm_forward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(residual), static_cast<const T*>(weight), static_cast<T*>(sum),
      static_cast<T*>(out), rstd, width, eps);
}

template <typename T>
void launch_backward(const void* grad_out, const void* grad_sum, const void* input, const void* weight,
                     const float* rstd, void* grad_input, float* partials, void* grad_weight, int64_t rows,
                     int64_t width, cudaStream_t stream) {
  const int64_t groups = st_rms_norm_partial_rows(rows);
  rms_norm_backward_kernel<<<static_cast<unsigned>(groups), kThreads, 0, stream>>>(
      static_cast<const T*>(grad_out), static_cast<const T*>(grad_sum), static_cast<const T*>(input),
      static_cast<const T*>(weight), rstd, static_cast<T*>(grad_input), partials, rows, width);
  const int64_t blocks = (width + kThreads - 1) / kThreads;
  sum_partials_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(partials, static_cast<T*>(grad_weight),
                                                                            groups, width);
}

}  // namespace

extern "C" int64_t st_rms_norm_partial_rows(int64_t rows) { return (rows + kRowsPerGroup - 1) / kRowsPerGroup; }

extern "C" cudaError_t st_rms_norm_forward(const void* x, const void* residual, const void* weight, void* sum, void* out,
                                           float* rstd, StActivationDtype dtype, int64_t rows, int64_t width, float eps,
                                           cudaStream_t stream) {
  if (rows <= 0 || width <= 0) return cudaSuccess;
  switch (dtype) {
    case ST_ACTIVATION_FP32: launch_forward<float>(x, residual, weight, sum, out, rstd, rows, width, eps, stream); break;
    case ST_ACTIVATION_BF16:
      launch_forward<__nv_bfloat16>(x, residual, weight, sum, out, rstd, rows, width, eps, stream);
      break;
    case ST_ACTIVATION_FP16: launch_forward<__half>(x, residual, weight, sum, out, rstd, rows, width, eps, stream); break;
  }
  return cudaGetLastError();
}

extern "C" cudaError_t st_rms_norm_backward(const void* grad_out, const void* grad_sum, const void* normed_input,
                                            const void* weight, const float* rstd, void* grad_input,
                                            float* weight_partials, void* grad_weight, StActivationDtype dtype,
                                            int64_t rows, int64_t width, cudaStream_t stream) {
  if (rows <= 0 || width <= 0) return cudaSuccess;
  switch (dtype) {
    case ST_ACTIVATION_FP32:
      launch_backward<float>(grad_out, grad_sum, normed_input, weight, rstd, grad_input, weight_partials, grad_weight,
                             rows, width, stream);
      break;
    case ST_ACTIVATION_BF16:
      launch_backward<__nv_bfloat16>(grad_out, grad_sum, normed_input, weight, rstd, grad_input, weight_partials,
                                     grad_weight, rows, width, stream);
      break;
    case ST_ACTIVATION_FP16:
      launch_backward<__half>(grad_out, grad_sum, normed_input, weight, rstd, grad_input, weight_partials, grad_weight,
                              rows, width, stream);
      break;
  }
  return cudaGetLastError();
}

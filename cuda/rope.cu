#include "cuda/rope.h"

#include "cuda/device_dtype.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

using st_cuda::from_float;
using st_cuda::to_float;

// One thread per (batch, head, token, j < half) pair of elements. Forward (transpose false):
// a' = a cos_j - b sin_j, b' = b cos_{j+h} + a sin_{j+h}. Backward (transpose true), with a, b
// the output gradients: a' = a cos_j + b sin_{j+h}, b' = b cos_{j+h} - a sin_j.
template <typename T, bool transpose>
__global__ void rope_kernel(StHeads in, StHeads out, const T* __restrict__ cos, const T* __restrict__ sin,
                            int64_t heads, int64_t tokens, int64_t head_dim, int64_t pairs) {
  const int64_t half = head_dim / 2;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < pairs;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = i % half;
    const int64_t t = (i / half) % tokens;
    const int64_t h = (i / (half * tokens)) % heads;
    const int64_t b = i / (half * tokens * heads);
    const T* x = static_cast<const T*>(in.data) + b * in.batch_stride + h * in.head_stride + t * in.token_stride;
    T* y = static_cast<T*>(out.data) + b * out.batch_stride + h * out.head_stride + t * out.token_stride;
    const float a = to_float(x[j]), c = to_float(x[j + half]);
    const float cos_a = to_float(cos[t * head_dim + j]), cos_b = to_float(cos[t * head_dim + j + half]);
    const float sin_a = to_float(sin[t * head_dim + j]), sin_b = to_float(sin[t * head_dim + j + half]);
    if (transpose) {
      y[j] = from_float<T>(a * cos_a + c * sin_b);
      y[j + half] = from_float<T>(c * cos_b - a * sin_a);
    } else {
      y[j] = from_float<T>(a * cos_a - c * sin_a);
      y[j + half] = from_float<T>(c * cos_b + a * sin_b);
    }
  }
}

template <typename T, bool transpose>
void launch(StHeads in, StHeads out, const void* cos, const void* sin, int64_t batch, int64_t heads, int64_t tokens,
            int64_t head_dim, cudaStream_t stream) {
  const int64_t pairs = batch * heads * tokens * (head_dim / 2);
  const int64_t blocks = (pairs + kThreads - 1) / kThreads;
  rope_kernel<T, transpose><<<static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads, 0, stream>>>(
      in, out, static_cast<const T*>(cos), static_cast<const T*>(sin), heads, tokens, head_dim, pairs);
}

template <bool transpose>
cudaError_t dispatch(StHeads in, StHeads out, const void* cos, const void* sin, StActivationDtype dtype, int64_t batch,
                     int64_t heads, int64_t tokens, int64_t head_dim, cudaStream_t stream) {
  if (batch <= 0 || heads <= 0 || tokens <= 0 || head_dim < 2) return cudaSuccess;
  switch (dtype) {
    case ST_ACTIVATION_FP32:
      launch<float, transpose>(in, out, cos, sin, batch, heads, tokens, head_dim, stream);
      break;
    case ST_ACTIVATION_BF16:
      launch<__nv_bfloat16, transpose>(in, out, cos, sin, batch, heads, tokens, head_dim, stream);
      break;
    case ST_ACTIVATION_FP16:
      launch<__half, transpose>(in, out, cos, sin, batch, heads, tokens, head_dim, stream);
      break;
  }
  return cudaGetLastError();
}

}  // namespace

extern "C" cudaError_t st_rope_forward(StHeads x, StHeads out, const void* cos, const void* sin, StActivationDtype dtype,
                                       int64_t batch, int64_t heads, int64_t tokens, int64_t head_dim,
                                       cudaStream_t stream) {
  return dispatch<false>(x, out, cos, sin, dtype, batch, heads, tokens, head_dim, stream);
}

extern "C" cudaError_t st_rope_backward(StHeads grad_out, StHeads grad_x, const void* cos, const void* sin,
                                        StActivationDtype dtype, int64_t batch, int64_t heads, int64_t tokens,
                                        int64_t head_dim, cudaStream_t stream) {
  return dispatch<true>(grad_out, grad_x, cos, sin, dtype, batch, heads, tokens, head_dim, stream);
}

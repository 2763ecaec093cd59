#include "cuda/swiglu.h"

#include "cuda/device_dtype.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

using st_cuda::from_float;
using st_cuda::to_float;

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// Grid-stride over the rows * width outputs.
template <typename T>
__global__ void swiglu_forward_kernel(const T* __restrict__ gate, int64_t gate_stride, const T* __restrict__ up,
                                      int64_t up_stride, T* __restrict__ out, int64_t rows, int64_t width) {
  const int64_t count = rows * width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / width, column = i % width;
    const float g = to_float(gate[row * gate_stride + column]);
    const float u = to_float(up[row * up_stride + column]);
    out[i] = from_float<T>(g * sigmoid(g) * u);
  }
}

template <typename T>
__global__ void swiglu_backward_kernel(const T* __restrict__ gate, int64_t gate_stride, const T* __restrict__ up,
                                       int64_t up_stride, const T* __restrict__ grad_out, T* __restrict__ grad_gate,
                                       T* __restrict__ grad_up, int64_t rows, int64_t width) {
  const int64_t count = rows * width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / width, column = i % width;
    const float g = to_float(gate[row * gate_stride + column]);
    const float u = to_float(up[row * up_stride + column]);
    const float grad = to_float(grad_out[i]);
    const float s = sigmoid(g);
    grad_gate[i] = from_float<T>(grad * u * s * (1.0f + g * (1.0f - s)));
    grad_up[i] = from_float<T>(grad * g * s);
  }
}

dim3 grid_for(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return dim3(static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks));
}

template <typename T>
void launch_forward(StRows gate, StRows up, void* out, int64_t rows, int64_t width, cudaStream_t stream) {
  swiglu_forward_kernel<<<grid_for(rows * width), kThreads, 0, stream>>>(
      static_cast<const T*>(gate.data), gate.row_stride, static_cast<const T*>(up.data), up.row_stride,
      static_cast<T*>(out), rows, width);
}

template <typename T>
void launch_backward(StRows gate, StRows up, const void* grad_out, void* grad_gate, void* grad_up, int64_t rows,
                     int64_t width, cudaStream_t stream) {
  swiglu_backward_kernel<<<grid_for(rows * width), kThreads, 0, stream>>>(
      static_cast<const T*>(gate.data), gate.row_stride, static_cast<const T*>(up.data), up.row_stride,
      static_cast<const T*>(grad_out), static_cast<T*>(grad_gate), static_cast<T*>(grad_up), rows, width);
}

}  // namespace

extern "C" cudaError_t st_swiglu_forward(StRows gate, StRows up, void* out, StActivationDtype dtype, int64_t rows,
                                         int64_t width, cudaStream_t stream) {
  if (rows <= 0 || width <= 0) return cudaSuccess;
  switch (dtype) {
    case ST_ACTIVATION_FP32: launch_forward<float>(gate, up, out, rows, width, stream); break;
    case ST_ACTIVATION_BF16: launch_forward<__nv_bfloat16>(gate, up, out, rows, width, stream); break;
    case ST_ACTIVATION_FP16: launch_forward<__half>(gate, up, out, rows, width, stream); break;
  }
  return cudaGetLastError();
}

extern "C" cudaError_t st_swiglu_backward(StRows gate, StRows up, const void* grad_out, void* grad_gate, void* grad_up,
                                          StActivationDtype dtype, int64_t rows, int64_t width, cudaStream_t stream) {
  if (rows <= 0 || width <= 0) return cudaSuccess;
  switch (dtype) {
    case ST_ACTIVATION_FP32: launch_backward<float>(gate, up, grad_out, grad_gate, grad_up, rows, width, stream); break;
    case ST_ACTIVATION_BF16:
      launch_backward<__nv_bfloat16>(gate, up, grad_out, grad_gate, grad_up, rows, width, stream);
      break;
    case ST_ACTIVATION_FP16: launch_backward<__half>(gate, up, grad_out, grad_gate, grad_up, rows, width, stream); break;
  }
  return cudaGetLastError();
}

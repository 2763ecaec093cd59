#include "cuda/sum_squares.h"

namespace {

constexpr int kThreads = 256;

// Grid-stride partial sums per thread, a shared-memory tree per block, one fp64 atomic per block.
__global__ void sum_squares_kernel(const float* __restrict__ x, int64_t n, double* __restrict__ sum) {
  __shared__ double partial[kThreads];
  double mine = 0.0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double value = static_cast<double>(x[i]);
    mine += value * value;
  }
  partial[threadIdx.x] = mine;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sum, partial[0]);
}

}  // namespace

extern "C" cudaError_t st_sum_squares_fp64(const float* x, int64_t n, double* sum, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  constexpr int64_t kMaxBlocks = 132 * 8;  // a few waves on an H100; the loop strides the rest
  const int64_t needed = (n + kThreads - 1) / kThreads;
  const int64_t blocks = needed < kMaxBlocks ? needed : kMaxBlocks;
  sum_squares_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, n, sum);
  return cudaGetLastError();
}

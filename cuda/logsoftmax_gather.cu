#include "cuda/logsoftmax_gather.h"

#include <cmath>

#include "cuda/device_dtype.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int64_t kIgnoreTarget = -100;  // model/token_logp.h's

using st_cuda::from_float;
using st_cuda::to_float;

// A running (max, sum of exp(x - max)) pair; merging two keeps the sum relative to the larger max.
struct MaxSum {
  float max, sum;
};
__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  if (a.max == -INFINITY) return b;
  if (b.max == -INFINITY) return a;
  const float m = fmaxf(a.max, b.max);
  return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
}

// Block-wide merge of every thread's pair; the result is valid in all threads.
__device__ MaxSum block_merge(MaxSum mine) {
  __shared__ MaxSum warps[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) {
    mine = merge(mine, {__shfl_xor_sync(0xffffffffu, mine.max, offset), __shfl_xor_sync(0xffffffffu, mine.sum, offset)});
  }
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = mine;
  __syncthreads();
  MaxSum total = warps[0];
  for (int w = 1; w < kThreads / 32; ++w) total = merge(total, warps[w]);
  return total;
}

// Block-wide sum of every thread's value; the result is valid in all threads.
__device__ float block_sum(float mine) {
  __shared__ float warps[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) mine += __shfl_xor_sync(0xffffffffu, mine, offset);
  __syncthreads();  // the shared slots may still be read by a previous call's threads
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = mine;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) total += warps[w];
  return total;
}

// One block per row.
template <typename T>
__global__ void logsumexp_gather_kernel(const T* __restrict__ logits, const int64_t* __restrict__ targets,
                                        float temperature, float* __restrict__ logp, float* __restrict__ lse,
                                        float* __restrict__ entropy, int64_t vocab) {
  const int64_t row = blockIdx.x;
  const T* x = logits + row * vocab;
  MaxSum mine{-INFINITY, 0.0f};
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads) mine = merge(mine, {to_float(x[j]) / temperature, 1.0f});
  const MaxSum total = block_merge(mine);
  const float row_lse = total.max + logf(total.sum);
  if (threadIdx.x == 0) {
    const int64_t target = targets[row];
    lse[row] = row_lse;
    logp[row] = target == kIgnoreTarget ? 0.0f : to_float(x[target < 0 ? 0 : target]) / temperature - row_lse;
  }
  if (entropy == nullptr) return;  // the same for every thread of the block
  float plogp = 0.0f;
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads) {
    const float log_p = to_float(x[j]) / temperature - row_lse;
    plogp += expf(log_p) * log_p;
  }
  const float row_plogp = block_sum(plogp);
  if (threadIdx.x == 0) entropy[row] = -row_plogp;
}

template <typename T>
__global__ void logsoftmax_gather_backward_kernel(T* __restrict__ logits, const int64_t* __restrict__ targets,
                                                  float temperature, const float* __restrict__ lse,
                                                  const float* __restrict__ grad, int64_t vocab) {
  const int64_t row = blockIdx.x;
  T* x = logits + row * vocab;
  const int64_t target = targets[row];
  const float g = target == kIgnoreTarget ? 0.0f : grad[row] / temperature;
  const int64_t picked = target < 0 ? 0 : target;
  const float row_lse = lse[row];
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads) {
    const float d = (j == picked ? g : 0.0f) - g * expf(to_float(x[j]) / temperature - row_lse);
    x[j] = from_float<T>(d);
  }
}

}  // namespace

extern "C" cudaError_t st_logsumexp_gather(const void* logits, StLogitsDtype dtype, const int64_t* targets,
                                           float temperature, float* logp, float* lse, float* entropy, int64_t rows,
                                           int64_t vocab, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(rows));
  switch (dtype) {
    case ST_LOGITS_FP32:
      logsumexp_gather_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const float*>(logits), targets, temperature,
                                                             logp, lse, entropy, vocab);
      break;
    case ST_LOGITS_BF16:
      logsumexp_gather_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(logits), targets,
                                                             temperature, logp, lse, entropy, vocab);
      break;
    case ST_LOGITS_FP16:
      logsumexp_gather_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const __half*>(logits), targets, temperature,
                                                             logp, lse, entropy, vocab);
      break;
  }
  return cudaGetLastError();
}

extern "C" cudaError_t st_logsoftmax_gather_backward(void* logits, StLogitsDtype dtype, const int64_t* targets,
                                                     float temperature, const float* lse, const float* grad,
                                                     int64_t rows, int64_t vocab, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(rows));
  switch (dtype) {
    case ST_LOGITS_FP32:
      logsoftmax_gather_backward_kernel<<<grid, kThreads, 0, stream>>>(static_cast<float*>(logits), targets,
                                                                       temperature, lse, grad, vocab);
      break;
    case ST_LOGITS_BF16:
      logsoftmax_gather_backward_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(logits), targets,
                                                                       temperature, lse, grad, vocab);
      break;
    case ST_LOGITS_FP16:
      logsoftmax_gather_backward_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__half*>(logits), targets,
                                                                       temperature, lse, grad, vocab);
      break;
  }
  return cudaGetLastError();
}

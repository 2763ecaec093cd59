#include "cuda/adamw8bit.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

constexpr int kBlock = 256;  // elements per quantization block = threads per thread block

// The host's dynamic_code (lib/util/dynamic_quant.cpp): binary search and midpoint rule.
__device__ uint8_t dynamic_code(const float* map, float x) {
  int pivot = 127, upper_pivot = 255, lower_pivot = 0;
  float lower = -1.0f, upper = 1.0f;
  float value = map[pivot];
  for (int step = 64; step > 0; step >>= 1) {
    if (x > value) {
      lower_pivot = pivot;
      lower = value;
      pivot += step;
    } else {
      upper_pivot = pivot;
      upper = value;
      pivot -= step;
    }
    value = map[pivot];
  }
  if (upper_pivot == 255) upper = map[upper_pivot];
  if (lower_pivot == 0) lower = map[lower_pivot];
  if (x > value) return static_cast<uint8_t>(x > __fmul_rn(__fadd_rn(upper, value), 0.5f) ? upper_pivot : pivot);
  return static_cast<uint8_t>(x < __fmul_rn(__fadd_rn(lower, value), 0.5f) ? lower_pivot : pivot);
}

// The largest of each thread's `value` (>= 0) over the thread block, in every thread.
__device__ float block_max(float value, float* scratch) {
  for (int offset = 16; offset > 0; offset >>= 1) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch may still be read from the previous call
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  // Every warp reduces the 8 warp maxima (zeros elsewhere: the values are magnitudes) across
  // all its lanes, so each thread ends with the block's maximum.
  value = lane < kBlock / 32 ? scratch[lane] : 0.0f;
  for (int offset = 16; offset > 0; offset >>= 1) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

__device__ bool decays(int64_t i, const int64_t* decayed, int count) {
  for (int r = 0; r < count; ++r) {
    if (i >= decayed[2 * r] && i < decayed[2 * r] + decayed[2 * r + 1]) return true;
  }
  return false;
}

__global__ void adamw8bit_kernel(float* __restrict__ p, uint8_t* __restrict__ m_codes, float* __restrict__ m_absmax,
                                 uint8_t* __restrict__ v_codes, float* __restrict__ v_absmax,
                                 const float* __restrict__ g, const float* __restrict__ grad_scale,
                                 const float* __restrict__ signed_map, const float* __restrict__ unsigned_map,
                                 const int64_t* __restrict__ decayed, int decayed_count, void* __restrict__ copy,
                                 StCopyDtype copy_dtype, int64_t n, StAdamWScalars s) {
  __shared__ float smap[256], umap[256], scratch[kBlock / 32];
  smap[threadIdx.x] = signed_map[threadIdx.x];
  umap[threadIdx.x] = unsigned_map[threadIdx.x];
  __syncthreads();
  const float scale = grad_scale ? *grad_scale : 1.0f;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  for (int64_t block = blockIdx.x; block < blocks; block += gridDim.x) {
    const int64_t i = block * kBlock + threadIdx.x;
    const bool real = i < n;
    float m = 0.0f, v = 0.0f;
    if (real) {
      const float grad = grad_scale ? __fmul_rn(g[i], scale) : g[i];
      m = __fmul_rn(smap[m_codes[i]], m_absmax[block]);
      v = __fmul_rn(umap[v_codes[i]], v_absmax[block]);
      float param = p[i];
      if (decays(i, decayed, decayed_count)) param = __fmul_rn(param, s.decay_factor);
      m = __fadd_rn(__fmul_rn(m, s.beta1), __fmul_rn(s.one_minus_beta1, grad));
      v = __fadd_rn(__fmul_rn(v, s.beta2), __fmul_rn(__fmul_rn(s.one_minus_beta2, grad), grad));
      const float denominator = __fadd_rn(__fdiv_rn(__fsqrt_rn(v), s.correction2_sqrt), s.eps);
      param = __fsub_rn(param, __fdiv_rn(__fmul_rn(s.step_size, m), denominator));
      p[i] = param;
      if (copy_dtype == ST_COPY_BF16) static_cast<__nv_bfloat16*>(copy)[i] = __float2bfloat16_rn(param);
      if (copy_dtype == ST_COPY_FP16) static_cast<__half*>(copy)[i] = __float2half_rn(param);
    }
    const float m_max = block_max(fabsf(m), scratch);
    const float v_max = block_max(fabsf(v), scratch);
    if (real) {
      m_codes[i] = dynamic_code(smap, __fmul_rn(m, __fdiv_rn(1.0f, m_max)));
      v_codes[i] = dynamic_code(umap, __fmul_rn(v, __fdiv_rn(1.0f, v_max)));
    }
    if (threadIdx.x == 0) {
      m_absmax[block] = m_max;
      v_absmax[block] = v_max;
    }
  }
}

}  // namespace

extern "C" cudaError_t st_adamw8bit(float* param, uint8_t* m_codes, float* m_absmax, uint8_t* v_codes, float* v_absmax,
                                    const float* grad, const float* grad_scale, const float* signed_map,
                                    const float* unsigned_map, const int64_t* decayed, int decayed_count, void* copy,
                                    StCopyDtype copy_dtype, int64_t n, StAdamWScalars s, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  constexpr int64_t kMaxBlocks = 132 * 64;  // the loop strides over the rest
  const int64_t blocks = (n + kBlock - 1) / kBlock < kMaxBlocks ? (n + kBlock - 1) / kBlock : kMaxBlocks;
  adamw8bit_kernel<<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(
      param, m_codes, m_absmax, v_codes, v_absmax, grad, grad_scale, signed_map, unsigned_map, decayed,
      decayed_count, copy, copy_dtype, n, s);
  return cudaGetLastError();
}

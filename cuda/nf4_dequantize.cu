#include "cuda/nf4_dequantize.h"

#include "cuda/device_dtype.cuh"
#include "cuda/nf4_table.h"

namespace {

constexpr int kThreads = 256;

__constant__ float kCodes[16] = ST_NF4_CODE_VALUES;

// One thread per code byte (two weights), grid-stride over all rows' bytes.
template <typename T>
__global__ void nf4_dequantize_kernel(const uint8_t* __restrict__ codes, int64_t row_bytes, int64_t bytes_per_row,
                                      int64_t total_bytes, const float* __restrict__ absmax, T* __restrict__ out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total_bytes; i += stride) {
    const int64_t row = i / bytes_per_row, column = i - row * bytes_per_row;
    const uint8_t byte = codes[row * row_bytes + column];
    const float scale = absmax[i / 32];  // 32 bytes per block of 64 weights
    out[2 * i] = st_cuda::from_float<T>(kCodes[byte >> 4] * scale);
    out[2 * i + 1] = st_cuda::from_float<T>(kCodes[byte & 0x0F] * scale);
  }
}

template <typename T>
void launch(const uint8_t* codes, int64_t row_bytes, int64_t bytes_per_row, int64_t total_bytes, const float* absmax,
            void* out, cudaStream_t stream) {
  constexpr int64_t kMaxBlocks = 132 * 16;  // a few waves on an H100; the loop strides the rest
  const int64_t needed = (total_bytes + kThreads - 1) / kThreads;
  const int64_t blocks = needed < kMaxBlocks ? needed : kMaxBlocks;
  nf4_dequantize_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      codes, row_bytes, bytes_per_row, total_bytes, absmax, static_cast<T*>(out));
}

}  // namespace

extern "C" cudaError_t st_nf4_dequantize(const uint8_t* codes, int64_t row_bytes, int64_t blocks_per_row, int64_t rows,
                                         const float* absmax, void* out, StActivationDtype dtype,
                                         cudaStream_t stream) {
  const int64_t bytes_per_row = blocks_per_row * 32, total_bytes = bytes_per_row * rows;
  if (total_bytes <= 0) return cudaSuccess;
  if (bytes_per_row > row_bytes) return cudaErrorInvalidValue;
  switch (dtype) {
    case ST_ACTIVATION_FP32: launch<float>(codes, row_bytes, bytes_per_row, total_bytes, absmax, out, stream); break;
    case ST_ACTIVATION_BF16:
      launch<__nv_bfloat16>(codes, row_bytes, bytes_per_row, total_bytes, absmax, out, stream);
      break;
    case ST_ACTIVATION_FP16: launch<__half>(codes, row_bytes, bytes_per_row, total_bytes, absmax, out, stream); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

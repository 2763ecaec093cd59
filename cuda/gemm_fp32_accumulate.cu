#include "cuda/gemm_fp32_accumulate.h"

#include <cublas_v2.h>

namespace {

// One handle per thread and device (cuBLAS handles are neither shared across threads nor devices).
cublasHandle_t handle_for_current_device() {
  constexpr int kMaxDevices = 64;
  thread_local cublasHandle_t handles[kMaxDevices] = {};
  int device = 0;
  cudaGetDevice(&device);
  if (!handles[device]) cublasCreate(&handles[device]);
  return handles[device];
}

}  // namespace

extern "C" int st_gemm_tn_fp32_out(const void* d, const void* h, float* out, StGemmInput input, int64_t n,
                                   int64_t vocab, int64_t dim, int accumulate, cudaStream_t stream) {
  cublasHandle_t handle = handle_for_current_device();
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  cublasStatus_t status = cublasSetStream(handle, stream);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  const float alpha = 1.0f;
  const float beta = accumulate ? 1.0f : 0.0f;
  const cudaDataType type = input == ST_GEMM_BF16 ? CUDA_R_16BF : CUDA_R_16F;
  // Column-major view: out^T [D, V] = h^T [D, n] x d [n, V]; h row-major [n, D] is h^T with
  // leading dimension D, d row-major [n, V] is d^T [V, n] with leading dimension V, transposed.
  status = cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_T, static_cast<int>(dim), static_cast<int>(vocab),
                        static_cast<int>(n), &alpha, h, type, static_cast<int>(dim), d, type,
                        static_cast<int>(vocab), &beta, out, CUDA_R_32F, static_cast<int>(dim),
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return status;
}

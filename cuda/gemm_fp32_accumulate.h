/* The lm_head weight gradient of a log-prob chunk summed in fp32 inside the matmul:
   out[V, D] (fp32) (+)= d[n, V]^T @ h[n, D] with d and h in bf16/fp16, through cuBLAS with an
   fp32 output, so no 16-bit [V, D] product is made, added and cast. Reference: the libtorch
   product in lib/model/token_logp.cpp (tests/cuda/test_step_kernels.cpp checks it). */
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum StGemmInput { ST_GEMM_BF16 = 0, ST_GEMM_FP16 = 1 } StGemmInput;

/* cuBLAS is loaded on the first call (dlopen), not at start-up: NULL once it is loaded, else why it
   could not be (the library's name, where it was looked for, the fix). */
const char* st_cublas_load_error(void);

/* All row-major and contiguous on the current device; accumulate 0 overwrites out, else adds.
   Queued on stream; returns 0, or the cuBLAS status when it failed (CUBLAS_STATUS_NOT_INITIALIZED
   when cuBLAS could not be loaded: st_cublas_load_error says why). */
int st_gemm_tn_fp32_out(const void* d, const void* h, float* out, StGemmInput input, int64_t n, int64_t vocab,
                        int64_t dim, int accumulate, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

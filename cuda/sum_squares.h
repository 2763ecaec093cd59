/* The squared L2 norm of an fp32 vector with fp64 accumulation, in one pass on the GPU and
   without an fp64 copy of the data (the global gradient norm; lib/optim/grad_clip.cpp). The
   reference is the host loop there (tests/cuda/test_step_kernels.cpp compares them). */
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* *sum += x[0]^2 + ... + x[n-1]^2 (fp64 products and sums); sum is device memory. Queued on
   stream; returns the launch's error. */
cudaError_t st_sum_squares_fp64(const float* x, int64_t n, double* sum, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

/* Fused AdamW over a flat fp32 shard on the GPU: one pass reads param, m, v and grad, writes
   param, m, v and (optionally) the param rounded to the compute dtype. Reference: the libtorch
   op sequence in lib/optim/sharded_adamw.cpp (tests/cuda/test_fused_adamw.cpp compares them). */
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "cuda/adamw_scalars.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum StCopyDtype { ST_COPY_NONE = 0, ST_COPY_BF16 = 1, ST_COPY_FP16 = 2 } StCopyDtype;

/* Updates elements [0, n) of param/exp_avg/exp_avg_sq in place with grad * (*grad_scale) (the
   clip factor, read on the device so no host sync is needed; NULL = 1), multiplying param by
   s.decay_factor first, and writes param rounded (nearest even) to copy_dtype into copy unless
   ST_COPY_NONE. Queued on stream; returns the launch's error. */
cudaError_t st_fused_adamw(float* param, float* exp_avg, float* exp_avg_sq, const float* grad, const float* grad_scale,
                           void* copy, StCopyDtype copy_dtype, int64_t n, StAdamWScalars s, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

/* RMSNorm, optionally fused with the residual add before it, as transformers computes it:
   sum = x + residual (rounded to the dtype), n = sum * rstd in fp32 with
   rstd = 1 / sqrt(mean(sum^2) + eps), out = weight * n (n rounded to the dtype, then the product).
   One block per row: one read of x and residual, one write of sum and out, rstd [rows] saved for
   the backward. The backward is deterministic: the weight gradient is summed over fixed row
   groups into fp32 partials, then over the groups in order. The reference is the libtorch op
   sequence in lib/model/rms_norm.cpp (tests/cuda/test_rms_norm.cpp compares them). */
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "cuda/activation_dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x, residual, weight, sum, out of one dtype; [rows, width] contiguous (weight [width]).
   residual NULL: no add, sum NULL (it would be x). */
cudaError_t st_rms_norm_forward(const void* x, const void* residual, const void* weight, void* sum, void* out,
                                float* rstd, StActivationDtype dtype, int64_t rows, int64_t width, float eps,
                                cudaStream_t stream);

/* Rows of fp32 weight-gradient partials the backward needs as workspace ([rows, width] fp32). */
int64_t st_rms_norm_partial_rows(int64_t rows);

/* grad_out: d/d(out); grad_sum: d/d(sum) from the residual stream, or NULL. normed_input: the
   forward's sum (or x without a residual). grad_input = d/d(sum) in total, which is also the
   gradient of x and of residual; grad_weight [width] in the dtype. */
cudaError_t st_rms_norm_backward(const void* grad_out, const void* grad_sum, const void* normed_input,
                                 const void* weight, const float* rstd, void* grad_input, float* weight_partials,
                                 void* grad_weight, StActivationDtype dtype, int64_t rows, int64_t width,
                                 cudaStream_t stream);

#ifdef __cplusplus
}
#endif

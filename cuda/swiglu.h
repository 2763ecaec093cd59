/* SwiGLU, silu(gate) * up, in one pass: computed in fp32 and rounded once. gate and up are
   [rows, width] with unit column stride and their own row strides, so they may be the two
   halves of one fused gate/up projection ([rows, 2 * width], row stride 2 * width) or separate
   tensors. The reference is the libtorch op sequence in lib/model/swiglu.cpp
   (tests/cuda/test_swiglu.cpp compares them at odd sizes). */
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "cuda/activation_dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A [rows, width] matrix with unit column stride. */
typedef struct StRows {
  const void* data;
  int64_t row_stride;  /* elements */
} StRows;

/* out [rows, width] contiguous = silu(gate) * up. */
cudaError_t st_swiglu_forward(StRows gate, StRows up, void* out, StActivationDtype dtype, int64_t rows, int64_t width,
                              cudaStream_t stream);

/* grad_gate, grad_up [rows, width] contiguous: grad * up * silu'(gate) and grad * silu(gate);
   grad_out [rows, width] contiguous. */
cudaError_t st_swiglu_backward(StRows gate, StRows up, const void* grad_out, void* grad_gate, void* grad_up,
                               StActivationDtype dtype, int64_t rows, int64_t width, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

/* Rotary position embeddings applied to q or k in one pass (transformers' rotate_half
   convention): for j < half, out_j = x_j cos_j - x_{j+half} sin_j and
   out_{j+half} = x_{j+half} cos_{j+half} + x_j sin_{j+half}, in fp32, rounded once. Heads are
   [batch, heads, tokens, head_dim] with unit stride in head_dim and any other strides (q and k
   are transposed views of the projections). The backward is the transposed rotation. The
   reference is the libtorch op sequence in lib/model/rope.cpp (tests/cuda/test_rope.cpp). */
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "cuda/activation_dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct StHeads {
  void* data;
  int64_t batch_stride, head_stride, token_stride; /* elements */
} StHeads;

/* cos, sin: [tokens, head_dim] contiguous, in the dtype of x. out may not alias x. */
cudaError_t st_rope_forward(StHeads x, StHeads out, const void* cos, const void* sin, StActivationDtype dtype,
                            int64_t batch, int64_t heads, int64_t tokens, int64_t head_dim, cudaStream_t stream);

/* grad_x from grad_out: the transposed rotation. */
cudaError_t st_rope_backward(StHeads grad_out, StHeads grad_x, const void* cos, const void* sin,
                             StActivationDtype dtype, int64_t batch, int64_t heads, int64_t tokens, int64_t head_dim,
                             cudaStream_t stream);

#ifdef __cplusplus
}
#endif

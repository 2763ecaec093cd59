/* The per-step scalars of one AdamW update, shared by the host loop (lib/optim) and the CUDA
   kernel (fused_adamw.cu) so both compute the same expression. Plain C: no CUDA needed. */
#pragma once

typedef struct StAdamWScalars {
  /* Rounded to float from double, as torch rounds its Scalar arguments: 1 - beta in float
     would differ in the last bit. decay_factor is 1 - lr * weight_decay, or 1 (no decay). */
  float beta1, one_minus_beta1, beta2, one_minus_beta2, eps, step_size, correction2_sqrt, decay_factor;
} StAdamWScalars;

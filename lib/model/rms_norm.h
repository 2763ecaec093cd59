// RMSNorm as transformers computes it (normalisation in fp32, then cast, then the weight), alone
// or fused with the residual add in front of it (hidden + branch -> the sum and its norm).
#pragma once

#include <ATen/core/Tensor.h>

namespace st {

// x [.., D] -> weight * (x / rms(x)). Differentiable.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

struct NormedSum {
  at::Tensor sum;     // x + residual: the residual stream going on
  at::Tensor normed;  // rms_norm(sum)
};
// Differentiable in x, residual and weight.
NormedSum add_rms_norm(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight, double eps);

// Contiguous CUDA fp32/bf16/fp16 tensors of one dtype run cuda/'s fused kernel (one read of the
// inputs, one write of each output, forward and backward); everything else runs these op
// sequences, which are also the kernel's test oracle.
at::Tensor rms_norm_reference(const at::Tensor& x, const at::Tensor& weight, double eps);
NormedSum add_rms_norm_reference(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight, double eps);

}  // namespace st

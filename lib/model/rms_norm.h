// RMSNorm as transformers computes it (normalisation in fp32, then cast, then the weight; or
// Gemma's (1 + weight) in fp32, then cast: NormStyle), alone or fused with the residual add in
// front of it (hidden + branch -> the sum and its norm).
#pragma once

#include <ATen/core/Tensor.h>

#include "hf/model_family.h"

namespace st {

// x [.., D] -> weight * (x / rms(x)), or (1 + weight) * (x / rms(x)). Differentiable.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps, NormStyle style = NormStyle::weight);

struct NormedSum {
  at::Tensor sum;     // x + residual: the residual stream going on
  at::Tensor normed;  // rms_norm(sum)
};
// Differentiable in x, residual and weight.
NormedSum add_rms_norm(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight, double eps,
                       NormStyle style = NormStyle::weight);

// Contiguous CUDA fp32/bf16/fp16 tensors of one dtype under NormStyle::weight run cuda/'s fused
// kernel (one read of the inputs, one write of each output, forward and backward); everything
// else runs these op sequences, which are also the kernel's test oracle.
at::Tensor rms_norm_reference(const at::Tensor& x, const at::Tensor& weight, double eps,
                              NormStyle style = NormStyle::weight);
NormedSum add_rms_norm_reference(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight, double eps,
                                 NormStyle style = NormStyle::weight);

}  // namespace st

// Shared by the layer ops that run cuda/'s element-wise kernels (rms_norm, rope, swiglu): which
// tensors those kernels take, their dtype code, and the [rows, last dim] view they work on.
// Only for files compiled with ST_HAVE_CUDA.
#pragma once

#include <ATen/core/Tensor.h>

#include <algorithm>

#include "cuda/activation_dtype.h"

namespace st {

// A CUDA tensor in fp32, bf16 or fp16.
inline bool kernel_activation(const at::Tensor& t) {
  const at::ScalarType type = t.scalar_type();
  return t.is_cuda() && (type == at::kFloat || type == at::kBFloat16 || type == at::kHalf);
}

inline StActivationDtype activation_dtype(const at::Tensor& t) {
  if (t.scalar_type() == at::kBFloat16) return ST_ACTIVATION_BF16;
  return t.scalar_type() == at::kHalf ? ST_ACTIVATION_FP16 : ST_ACTIVATION_FP32;
}

// Rows of the [rows, t.size(-1)] view.
inline int64_t rows_of(const at::Tensor& t) { return t.numel() / std::max<int64_t>(t.size(-1), 1); }

}  // namespace st

// Rotary position embeddings as transformers computes them: inverse frequencies in fp32 (with
// linear or llama3 scaling), cos/sin of position x frequency in fp32 then cast to the compute
// dtype, applied with rotate_half on the two halves of each head.
#pragma once

#include <ATen/core/Tensor.h>

#include "model/model_config.h"

namespace st {

// [head_dim / 2] fp32 on CPU.
at::Tensor rope_inverse_frequencies(const ModelConfig& config);

struct RopeTables {
  at::Tensor cos;  // [T, head_dim]
  at::Tensor sin;  // [T, head_dim]
};

// Tables for positions 0..length-1 in `dtype`, on the device of `inverse_frequencies`
// (rope_inverse_frequencies, copied there once by the caller).
RopeTables make_rope_tables(const at::Tensor& inverse_frequencies, int64_t length, at::ScalarType dtype);

// x [B, H, T, head_dim] -> x * cos + rotate_half(x) * sin.
at::Tensor apply_rotary(const at::Tensor& x, const RopeTables& tables);

}  // namespace st

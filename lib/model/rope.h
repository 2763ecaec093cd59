// Rotary position embeddings as transformers computes them: inverse frequencies in fp32 (with
// linear or llama3 scaling), cos/sin of position x frequency in fp32 then cast to the compute
// dtype, applied with rotate_half on the two halves of each head.
#pragma once

#include <ATen/core/Tensor.h>

#include "hf/model_config.h"

namespace st {

// [rotary_dim / 2] fp32 on CPU (ModelConfig::rotary_dim: the head_dim, or a partial rotary's
// part of it): every layer's, or the full layers' where layers differ.
at::Tensor rope_inverse_frequencies(const ModelConfig& config);
// The sliding layers' where layers differ (ModelConfig::layer_types): local_rope_theta, unscaled.
at::Tensor local_rope_inverse_frequencies(const ModelConfig& config);

struct RopeTables {
  at::Tensor cos;  // [T, head_dim]
  at::Tensor sin;  // [T, head_dim]
};

// Tables for positions 0..length-1 in `dtype`, on the device of `inverse_frequencies`
// (rope_inverse_frequencies, copied there once by the caller).
RopeTables make_rope_tables(const at::Tensor& inverse_frequencies, int64_t length, at::ScalarType dtype);
// Tables [R, 1, T, head_dim] for per-row positions `position_ids` [R, T] (packed rows), on the
// device of `inverse_frequencies`; the same values as make_rope_tables at each position.
RopeTables make_rope_tables_at(const at::Tensor& inverse_frequencies, const at::Tensor& position_ids,
                               at::ScalarType dtype);

// x [B, H, T, head_dim] -> x * cos + rotate_half(x) * sin; with tables narrower than the head
// (partial rotary) over its first dimensions, the rest passed through. Differentiable in x. CUDA
// fp32/bf16/fp16 heads with unit stride in head_dim (any other strides) and tables of their
// dtype run cuda/'s fused kernel (one pass, fp32 inside, only the tables saved for backward);
// everything else runs apply_rotary_reference.
at::Tensor apply_rotary(const at::Tensor& x, const RopeTables& tables);
// The op sequence (negate, concatenate, two multiplies, an add): the CPU path and the kernel's
// test oracle.
at::Tensor apply_rotary_reference(const at::Tensor& x, const RopeTables& tables);

}  // namespace st

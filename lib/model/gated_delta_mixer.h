// Gated DeltaNet, the linear-attention token mixer of the hybrid Qwen3.5 / Qwen3.6 layers (beside
// attention, chosen per layer): in_proj_qkv -> depthwise causal conv1d (kernel 4) + SiLU ->
// q, k (L2-normalised, q scaled by Dk^-1/2, each key head serving value_heads / key_heads value
// heads) and v; beta = sigmoid(in_proj_b), decay g = -exp(A_log) softplus(in_proj_a + dt_bias);
// the gated delta rule (model/gated_delta_rule.h); RMSNorm per value head gated by
// silu(in_proj_z); out_proj. As transformers' Qwen3_5GatedDeltaNet on rows without a cache.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "hf/model_config.h"

namespace st {

// The layer's sizes as config.json gives them (LinearAttentionShape), and how it computes.
struct GatedDeltaShape : LinearAttentionShape {
  double norm_eps = 1e-6;  // rms_norm_eps
  int64_t chunk = 64;      // tokens per chunk of the delta rule
};

// The layer's projections, for what an adapter adds to them.
enum class GatedDeltaProjection { qkv, z, b, a, out };
// What an adapter (LoRA) adds to one projection's output, given that projection's input;
// undefined: nothing.
using ProjectionDelta = std::function<at::Tensor(GatedDeltaProjection, const at::Tensor& input)>;

// The checkpoint's tensors of one layer's linear_attn, by their names there.
struct GatedDeltaWeights {
  at::Tensor in_proj_qkv;  // [2 key_dim + value_dim, hidden]: q, k, v channels in that order
  at::Tensor in_proj_z;    // [value_dim, hidden]
  at::Tensor in_proj_b;    // [value_heads, hidden]
  at::Tensor in_proj_a;    // [value_heads, hidden]
  at::Tensor conv1d;       // [conv_channels, 1, kernel] (or [conv_channels, kernel]), no bias
  at::Tensor dt_bias;      // [value_heads]
  at::Tensor A_log;        // [value_heads]
  at::Tensor norm;         // [value_head_dim]: the gated RMSNorm's weight
  at::Tensor out_proj;     // [hidden, value_dim]
  ProjectionDelta delta;   // adapters on the projections; empty: none
};

// hidden [B, T, hidden] -> [B, T, hidden] in hidden's dtype. Differentiable in the hidden states
// and every weight. Without `sequence_starts` every row is one sequence from its start (the conv
// window and the state begin at zero; right padding never reaches the real tokens: the mixer is
// causal). With them, packed rows: the offsets into the row-major flattened tokens [B * T] where
// a sequence begins (ascending, every row's start among them, B * T last): at each the conv
// window and the recurrent state begin again, so no sequence sees another's tokens.
at::Tensor gated_delta_mixer(const at::Tensor& hidden, const GatedDeltaWeights& weights, const GatedDeltaShape& shape,
                             const std::vector<int64_t>* sequence_starts = nullptr);

// What a sequence's next part continues from: the last conv_kernel - 1 inputs of the conv (the
// in_proj_qkv outputs) and the delta rule's state. Undefined members: a sequence's start (zeros).
struct GatedDeltaCarry {
  at::Tensor conv_inputs;  // [B, conv_kernel - 1, conv_channels]
  at::Tensor state;        // [B, value_heads, key_head_dim, value_head_dim]
};
struct GatedDeltaStep {
  at::Tensor out;         // [B, T, hidden]
  GatedDeltaCarry carry;  // where this part ends
};
// The mixer on one part of each row's sequence, continuing from `from`: a prompt's carry feeds
// each of its completions (prompt sharing), gradients flowing through it into the prompt. The
// parts chained give the whole sequence's output.
GatedDeltaStep gated_delta_mixer_step(const at::Tensor& hidden, const GatedDeltaWeights& weights,
                                      const GatedDeltaShape& shape, const GatedDeltaCarry& from = {});

}  // namespace st

// The gated delta rule, the recurrence of Gated DeltaNet's token mixer (Qwen3.5 / Qwen3.6, Qwen3-Next):
// per value head a state S [Dk, Dv] that decays by exp(g_t), is corrected toward v_t along k_t with
// strength beta_t (the delta rule), and is read by q_t:
//   S_t = exp(g_t) S_{t-1} + k_t (beta_t (v_t - exp(g_t) S_{t-1}^T k_t))^T,   o_t = S_t^T q_t.
// Computed in chunks of `chunk` tokens as transformers' torch_chunk_gated_delta_rule does (a
// triangular solve inside each chunk, a scan over chunks), forward and backward through
// autograd; gated_delta_rule_recurrent is the token-by-token definition, the tests' judge.
// gated_delta_rule() is what the token mixer calls: the GPU's kernels for CUDA fp32 inputs
// (model/gated_delta_kernel.h), else the chunked libtorch path.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace st {

struct GatedDeltaInputs {
  // q, k [B, H, T, Dk]: already one per value head, L2-normalised, q scaled by Dk^-1/2 (the
  // mixer's work); v [B, H, T, Dv]; g [B, H, T] the log decay (<= 0); beta [B, H, T] in (0, 1).
  at::Tensor q, k, v, g, beta;
  at::Tensor initial_state;  // [B, H, Dk, Dv], or undefined: zeros (a sequence's start)
};

// Tokens [begin, begin + count) of every row, starting from `initial_state` (undefined: zeros).
GatedDeltaInputs token_range(const GatedDeltaInputs& in, int64_t begin, int64_t count,
                             const at::Tensor& initial_state = {});

struct GatedDeltaOutputs {
  at::Tensor out;          // [B, H, T, Dv]
  at::Tensor final_state;  // [B, H, Dk, Dv]: what a continuation of the sequence starts from
};

// In float64 for float64 inputs, else in float32 (as transformers computes it whatever the
// model's dtype); `out` in the inputs' dtype, `final_state` in the computing dtype.
// Differentiable in every input.
GatedDeltaOutputs gated_delta_rule_chunked(const GatedDeltaInputs& in, int64_t chunk = 64);

// The rule as the model runs it: gated_delta_rule_kernel for CUDA fp32 inputs, else
// gated_delta_rule_chunked. `sequence_starts` (0, ..., T): packed rows, each sequence from a zero
// state (`initial_state` unused) and `final_state` undefined.
GatedDeltaOutputs gated_delta_rule(const GatedDeltaInputs& in, int64_t chunk = 64,
                                   const std::vector<int64_t>* sequence_starts = nullptr);

// The definition, one token at a time (slow: tests only); `sequence_starts` as gated_delta_rule's.
GatedDeltaOutputs gated_delta_rule_recurrent(const GatedDeltaInputs& in,
                                             const std::vector<int64_t>* sequence_starts = nullptr);

}  // namespace st

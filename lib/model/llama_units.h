// The forward of a Llama model unit by unit, as the FSDP engine shards it (embedding, each
// decoder layer, head = final norm + lm_head) and as the scorer runs it whole: one forward for
// both. A unit gets its parameters by HF name (gathered views or whole tensors) and the
// micro-batch's shared inputs (TokenBatch: rotary tables and target positions built once per
// micro-batch, on the device). The head scores only positions that have a target.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "data/row_layout.h"
#include "model/activation_cache.h"
#include "model/llama_blocks.h"
#include "model/model_config.h"
#include "model/model_options.h"
#include "model/rope.h"
#include "model/token_logp.h"

namespace st {

// What every unit of one micro-batch's forward shares.
struct TokenBatch {
  at::Tensor input_ids;         // [R, T] int64 on the device
  TokenPositions positions;     // rotary tables in the compute dtype and the mask, on the device
  at::Tensor target_positions;  // [N] int64 on the device: row * T + position of each target
  at::Tensor target_ids;        // [N] int64 on the device
  at::Tensor target_slots;      // [N] int64 on the device: sequence * T + position of each target
  int64_t sequences = 0;        // S: the head returns one log-prob sum per sequence
  int64_t logp_chunk_tokens = 1024;
  AdapterForward adapter;       // how LoRA pairs among the parameters apply (scale 0: none given)
};

// input_ids and targets [R, T] (targets as in collate.h; read on the host, so finding the
// target positions costs the device no sync), `inverse_frequencies` from
// rope_inverse_frequencies on `device`, `layout` for packed or prompt-shared rows (undefined:
// one sequence per row), `sliding_window` the model's (0: none). Rows of one causal sequence
// each need neither spans nor a mask; other rows (several sequences, a shared prompt, a window
// shorter than the rows) get attention spans built here once, or with AttentionPath::masked
// the [R, 1, T, T] mask. Inputs go to the device from pinned memory without blocking the host.
TokenBatch make_token_batch(const at::Tensor& input_ids, const at::Tensor& targets,
                            const at::Tensor& inverse_frequencies, at::ScalarType compute_dtype,
                            int64_t logp_chunk_tokens, const RowLayout& layout = {}, int64_t sliding_window = 0,
                            AttentionPath attention = AttentionPath::varlen);

enum class UnitRole { embedding, layer, head };
// Units in execution order: 0 embedding, 1..L layers, L + 1 head.
UnitRole unit_role(size_t unit, size_t unit_count);
size_t unit_count(const ModelConfig& config);

// The lm_head's weight: the parameter whose gradient the head can write itself (a sink below);
// with tied embeddings the embedding's, the only parameter a tied head takes from unit 0.
const char* lm_head_weight_name(const ModelConfig& config);

// Where a unit writes parameter gradients itself instead of returning them through autograd:
// by HF name, views in the reduction dtype, written (overwrite) or added.
struct UnitGradSinks {
  TensorMap destinations;
  bool overwrite = false;
};

// Runs unit `unit`: `params` holds its parameters by HF name (for a tied head also the
// embedding's). Embedding: input ignored, returns [R, T, D]; layer: [R, T, D] -> [R, T, D]
// (matmuls through `cache` when given); head: hidden [R, T, D] -> summed target log-probs per
// sequence [S] fp32, the lm_head's gradient into sinks.destinations[lm_head name] when present.
at::Tensor llama_unit_forward(const ModelConfig& config, size_t unit, size_t count, const TensorMap& params,
                              const at::Tensor& input, const TokenBatch& batch, ActivationCache* cache = nullptr,
                              const UnitGradSinks& sinks = {});

// The embedding's backward, which needs no recompute: grad_output [R, T, D] rows added at the
// batch's token ids into sinks.destinations[embedding name] [V, D].
void embedding_backward(const TokenBatch& batch, const at::Tensor& grad_output, const UnitGradSinks& sinks);

// The whole model in one call, through the same unit forwards: log p of every target [N] fp32
// in (row, position) order (the scorer), and their sums per sequence [S] (tests, benches).
at::Tensor llama_target_logps(const LlamaWeights& weights, const ModelConfig& config, const TokenBatch& batch);
at::Tensor llama_sequence_logps(const LlamaWeights& weights, const ModelConfig& config, const TokenBatch& batch);
// input_ids [B, T] -> final-normed hidden states [B, T, D] at every position, through the same
// unit forwards (benches and tests that score every position with their own head).
at::Tensor llama_final_hidden(const LlamaWeights& weights, const ModelConfig& config, const at::Tensor& input_ids);
// The same TensorMap a unit receives, from whole-model weights (LoRA pairs under their PEFT names).
TensorMap unit_params(const LlamaWeights& weights, const ModelConfig& config, size_t unit);

}  // namespace st

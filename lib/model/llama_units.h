// The forward of a Llama model unit by unit, as the FSDP engine shards it (embedding, each
// decoder layer, head = final norm + lm_head) and as the scorer runs it whole: one forward for
// both. A unit gets its parameters bound by table key (gathered views or whole tensors) and the
// micro-batch's shared inputs (TokenBatch: rotary tables and target positions built once per
// micro-batch, on the device). The head scores only positions that have a target.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <vector>

#include "data/row_layout.h"
#include "hf/model_config.h"
#include "model/activation_cache.h"
#include "model/expert_exchange.h"
#include "model/llama_blocks.h"
#include "model/model_options.h"
#include "model/rope.h"
#include "model/token_logp.h"
#include "util/enum_names.h"

namespace st {

// The rotary frequencies ([head_dim / 2] fp32, rope_inverse_frequencies) and window (0: none)
// one kind of layer attends with.
struct LayerAttention {
  at::Tensor inverse_frequencies;
  int64_t window = 0;
};
// What a model's layers attend with, on one device, made once: every layer alike (`full`, with
// Mistral's window), or, where layers differ (ModelConfig::layer_types), the full layers' and the
// sliding layers' (`sliding`: the window and the local rotary base).
struct ModelAttention {
  LayerAttention full;
  LayerAttention sliding;  // undefined frequencies: every layer attends with `full`
};
ModelAttention model_attention(const ModelConfig& config, const at::Device& device);

// What an lm head returns: each sequence's summed target log-probs [S] (the offline objectives'),
// or its per-token lines [HeadLine count, S, L] (online objectives': GRPO's ratio per token), L
// the slot length (TokenBatch::slot_length), a target at its slot and 0 elsewhere.
enum class HeadOutput { sequence_sums, token_lines, token_lines_with_entropies };
template <>
struct EnumNames<HeadOutput> {
  static constexpr NamedValue<HeadOutput> table[] = {{HeadOutput::sequence_sums, "sequence_sums"},
                                                     {HeadOutput::token_lines, "token_lines"},
                                                     {HeadOutput::token_lines_with_entropies, "token_lines_with_entropies"}};
};
// The lines of a per-token output: the log-probs (differentiable), 1 at each target's slot, and
// with token_lines_with_entropies each target position's entropy (detached).
enum class HeadLine : int64_t { logps = 0, targets = 1, entropies = 2 };
int64_t head_line_count(HeadOutput output);

// What every unit of one micro-batch's forward shares.
struct TokenBatch {
  at::Tensor input_ids;         // [R, T] int64 on the device
  TokenPositions positions;     // rotary tables in the compute dtype and the mask, on the device
  TokenPositions sliding_positions;  // the sliding layers' where layers differ (ModelAttention::sliding)
  at::Tensor target_positions;  // [N] int64 on the device: row * T + position of each target
  at::Tensor target_ids;        // [N] int64 on the device
  at::Tensor target_slots;      // [N] int64 on the device: sequence * T + position of each target
  int64_t sequences = 0;        // S: the head returns one log-prob sum (or reward) per sequence
  int64_t slot_length = 0;      // the T of target_slots; 0: input_ids' (context_split.h pads the rows)
  at::Tensor reward_positions;  // [S] int64 on the device, a score head's: reward_positions.h
  int64_t logp_chunk_tokens = 1024;
  HeadOutput head_output = HeadOutput::sequence_sums;
  double logit_temperature = 1.0;  // the lm head's logits are divided by it (TokenLogpOptions)
  AdapterForward adapter;       // how LoRA pairs among the parameters apply (scale 0: none given)
  at::Tensor token_places;      // [R * T] int64 on the device: each token's place r * T + t in the whole
                                // rows (context_split.h; undefined: these rows are whole)
  at::Tensor token_weights;     // [R * T] fp32 on the device: MicroBatch::token_weights, for the
                                // router's load-balancing loss (undefined: none is computed)
  // Expert parallelism (model/expert_exchange.h): the ranks that hold the other experts; null
  // when this rank holds every expert.
  std::shared_ptr<ExpertExchange> experts;

  // What `layer` attends with: sliding_positions for a sliding layer of a model whose layers differ.
  const TokenPositions& positions_of(const ModelConfig& config, int64_t layer) const;
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
// The same for every kind of layer `kinds` holds (model_attention): positions, and
// sliding_positions where layers differ.
TokenBatch make_token_batch(const at::Tensor& input_ids, const at::Tensor& targets, const ModelAttention& kinds,
                            at::ScalarType compute_dtype, int64_t logp_chunk_tokens, const RowLayout& layout = {},
                            AttentionPath attention = AttentionPath::varlen);

enum class UnitRole { embedding, layer, head, experts };
// Units: 0 embedding, 1..L layers, L + 1 head, in execution order (run_unit_count), then one
// experts unit per sparse layer, in layer order (expert_params), which runs inside its layer's.
UnitRole unit_role(const ModelConfig& config, size_t unit);
size_t run_unit_count(const ModelConfig& config);
size_t unit_count(const ModelConfig& config);
// The experts unit of layer `layer` (0-based); 0 for a dense layer (unit 0 is never one).
size_t experts_unit_of(const ModelConfig& config, int64_t layer);

// A unit's parameters as its forward binds them (by table key, hf/param_table.h): the model
// parameters it takes (the embedding; the head's final norm and lm_head, for a tied head the
// embedding, lm_head_param) and a layer's with its LoRA pairs.
struct UnitWeights {
  std::array<at::Tensor, kModelParamCount> model;
  LayerWeights layer;

  const at::Tensor& operator[](ModelParam param) const { return model[static_cast<size_t>(param)]; }
  at::Tensor& operator[](ModelParam param) { return model[static_cast<size_t>(param)]; }
  void bind(const ParamKey& key, const at::Tensor& tensor);
};

// Where a unit writes parameter gradients itself instead of returning them through autograd:
// by model parameter (the embedding's, the lm_head's), views in the reduction dtype, written
// (overwrite) or added.
struct UnitGradSinks {
  std::array<at::Tensor, kModelParamCount> destinations;
  bool overwrite = false;

  const at::Tensor& operator[](ModelParam param) const { return destinations[static_cast<size_t>(param)]; }
  at::Tensor& operator[](ModelParam param) { return destinations[static_cast<size_t>(param)]; }
  bool writes(const ParamKey& key) const { return key.kind == ParamKey::Kind::model && (*this)[key.model].defined(); }
};

// Runs unit `unit` with `weights`. Embedding: input ignored, returns [R, T, D]; layer:
// [R, T, D] -> [R, T, D] (matmuls through `cache` when given); head: hidden [R, T, D] -> what
// batch.head_output asks (summed target log-probs per sequence [S] fp32, or the per-token lines),
// the lm_head's gradient into its sink when present, or with a score head each sequence's reward
// [S] fp32 (at batch.reward_positions). Under context parallelism (batch.positions.context) the
// head returns lines whatever it is asked, this rank's targets only: the caller sums them over
// the group, and for sums then along each line. A sparse layer writes its tokens' routing into `routing`
// when given.
at::Tensor llama_unit_forward(const ModelConfig& config, size_t unit, const UnitWeights& weights,
                              const at::Tensor& input, const TokenBatch& batch, ActivationCache* cache = nullptr,
                              const UnitGradSinks& sinks = {}, Routing* routing = nullptr);

// The embedding's forward: the rows of `table` [V, D] at `ids`, on the ids' device. A table on
// another device (a frozen embedding kept in host memory, lora.host_embedding) is read where it
// is, and only the batch's rows move.
at::Tensor embedding_rows(const at::Tensor& table, const at::Tensor& ids);
// The embedding unit's output: embedding_rows, times sqrt(hidden_size) rounded to their dtype
// where the family scales them (FamilySpec::scaled_embedding, as transformers' Gemma does).
at::Tensor embed_tokens(const ModelConfig& config, const at::Tensor& table, const at::Tensor& ids);

// The head: the final norm of hidden states [.., D], which training and scoring then score in
// chunks against their targets (chunked_token_logps) and generation turns into logits [.., V]
// through the lm_head (head_logits). The embedding, the decoder layers and this are the one
// forward of every path: training's units, the scorer and generation.
at::Tensor head_normed(const ModelConfig& config, const at::Tensor& final_norm, const at::Tensor& hidden);
at::Tensor head_logits(const ModelConfig& config, const LlamaWeights& weights, const at::Tensor& hidden);

// The embedding's backward, which needs no recompute: grad_output [R, T, D] rows (times
// embed_tokens' scale) added at the batch's token ids into the embedding's sink [V, D].
void embedding_backward(const ModelConfig& config, const TokenBatch& batch, const at::Tensor& grad_output,
                        const UnitGradSinks& sinks);

// The whole model in one call, through the same unit forwards: log p of every target [N] fp32
// in (row, position) order (the scorer), and the head's output (batch.head_output: their sums per
// sequence [S], or the per-token lines) (tests, benches).
// `routing`, when given, receives each sparse layer's routing of the batch's tokens, in layer order.
at::Tensor llama_target_logps(const LlamaWeights& weights, const ModelConfig& config, const TokenBatch& batch,
                              std::vector<Routing>* routing = nullptr);
at::Tensor llama_sequence_logps(const LlamaWeights& weights, const ModelConfig& config, const TokenBatch& batch);
// A reward model's rewards per sequence [S] fp32 (batch.reward_positions set).
at::Tensor llama_sequence_rewards(const LlamaWeights& weights, const ModelConfig& config, const TokenBatch& batch);
// input_ids [B, T] -> final-normed hidden states [B, T, D] at every position, through the same
// unit forwards (benches and tests that score every position with their own head).
at::Tensor llama_final_hidden(const LlamaWeights& weights, const ModelConfig& config, const at::Tensor& input_ids);
// What unit `unit` runs with, from whole-model weights.
UnitWeights unit_params(const LlamaWeights& weights, const ModelConfig& config, size_t unit);

}  // namespace st

// Llama decoder blocks as functions of (parameter tensors, activations). They know nothing of
// ranks or sharding: the FSDP engine hands in gathered views, the scorer whole tensors.
// Conventions follow transformers: RMSNorm in fp32 then cast, rotate_half RoPE, causal
// attention with grouped-query heads, SwiGLU MLP.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "hf/model_config.h"
#include "hf/param_table.h"
#include "model/activation_cache.h"
#include "model/attention_spans.h"
#include "model/context_exchange.h"
#include "model/expert_exchange.h"
#include "model/gated_delta_mixer.h"
#include "model/lora.h"
#include "model/rms_norm.h"
#include "model/rope.h"
#include "model/sequence_runs.h"

namespace st {

struct Routing;  // a sparse layer's routing of its tokens (moe_block.h)

// Where a micro-batch's tokens sit: their rotary tables and which keys each may attend to:
// spans (attention_spans.h) when defined, else the mask when defined, else causal over each row.
struct TokenPositions {
  RopeTables rope;            // [T, head_dim], or [R, 1, T, head_dim] for per-row positions
  AttentionSpans spans;       // over the flattened [R * T] tokens
  at::Tensor attention_mask;  // [R, 1, T, T] bool, true = attend (the oracle; generation's cache)
  // Context parallelism (context_split.h): the spans' keys are the group's gathered tokens.
  std::shared_ptr<ContextExchange> context;
  // Laid-out rows' sequences, for a recurrent token mixer (gated_delta_layer.h); nullopt: each
  // row one sequence from its start; empty: a layout collate does not build.
  std::optional<std::vector<SequenceRun>> runs;
};

// A sparse layer's experts, one weight per expert by its index (kExpertRows; empty in a dense
// layer). Under expert parallelism only this rank's experts are defined.
struct ExpertWeights {
  std::vector<at::Tensor> gate, up, down;  // [I, D], [I, D], [D, I]
};

// One decoder layer's parameters by their table key (hf/param_table.h); biases are undefined
// tensors when the model has none.
struct LayerWeights {
  std::array<at::Tensor, kLayerParamCount> params;
  ExpertWeights experts;
  LoraPairs lora;          // by LoraTarget; present when the unit's parameters hold them
  AdapterForward adapter;  // how the adapters apply (llama_units.h sets it per micro-batch)
  at::Tensor token_places;  // the tokens' places in the whole rows under context parallelism (lora.h)
  // Expert parallelism: the ranks that hold the experts this rank lacks (null: it holds all).
  std::shared_ptr<ExpertExchange> expert_exchange;
  int64_t layer = 0;

  const at::Tensor& operator[](LayerParam param) const { return params[static_cast<size_t>(param)]; }
  at::Tensor& operator[](LayerParam param) { return params[static_cast<size_t>(param)]; }
  // Binds a layer or LoRA parameter by its key; false for a model parameter.
  bool bind(const ParamKey& key, const at::Tensor& tensor);
};

struct LlamaWeights {
  at::Tensor embed;       // [V, D]
  std::vector<LayerWeights> layers;
  at::Tensor final_norm;  // [D]
  at::Tensor lm_head;     // [V, D]; the embedding itself when tied; undefined with a score head
  at::Tensor score;       // [1, D]: a reward model's head (ModelHead::score), else undefined
};

// Generation: each layer's keys and values of the tokens decoded so far, written in place.
// A hybrid's Gated DeltaNet layers keep their conv inputs and recurrent state instead.
struct KvCache {
  std::vector<at::Tensor> keys, values;  // per layer [B, kv_heads, capacity, head_dim]; undefined in a Gated DeltaNet layer
  std::vector<GatedDeltaCarry> carries;  // per layer: a Gated DeltaNet layer's, where its rows end
  at::Tensor new_tokens_valid;           // [B, T] bool of this forward's tokens (false: left padding); undefined: all
  int64_t length = 0;                    // positions filled; the caller advances it after a forward
  // [B] int64 on the device, for one token per row (T = 1): each row's key goes to its own column
  // (rows decoded at different places, model/decode_batch.h) and the queries attend over
  // [0, length), which the caller sets past every row's column. Undefined: all rows at `length`.
  at::Tensor columns;
};

// Picks the tensors by their HF names (hf/param_table.h), and LoRA pairs by their PEFT names
// where present: once, when whole-model weights are loaded. Throws ModelError naming a missing one.
// With `experts` (expert parallelism) only this rank's run of each sparse layer's experts is
// picked (rank i of P: experts [i E/P, (i + 1) E/P)) and the layers reach the others through it.
LlamaWeights llama_weights(const TensorMap& tensors, const ModelConfig& config,
                           const std::shared_ptr<ExpertExchange>& experts = nullptr);

// x W^T (+ bias) plus the layer's adapter on `target` where it holds that pair (the dropout stream
// of the layer and target, lora.h): every adapted projection of a layer, whatever its block.
at::Tensor adapted_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, const LayerWeights& w,
                          LoraTarget target, ActivationCache* cache);

// The matmuls go through `cache` when one is given (selective recompute, activation_cache.h).
// With `kv_cache` the new keys and values go to its positions [length, length + T) and the
// queries attend over [0, length + T) under positions.attention_mask [B, 1, T, length + T]; with
// its `columns`, to those columns, the queries attending over [0, length).
// x [B, T, D] (already normalised) -> attention output [B, T, D]; with the family's output gate
// (FamilySpec::attention_output_gate) times sigmoid(gate) before o_proj.
at::Tensor attention_block(const LayerWeights& weights, const at::Tensor& x, const TokenPositions& positions,
                           const ModelConfig& config, ActivationCache* cache = nullptr, KvCache* kv_cache = nullptr);
// x [B, T, D] (already normalised) -> down(act(gate(x)) * up(x)), act silu or GELU-tanh
// (FamilySpec::activation); a sparse layer's: moe_block.h.
at::Tensor mlp_block(const LayerWeights& weights, const at::Tensor& x, ActivationCache* cache = nullptr,
                     Activation activation = Activation::silu);
// hidden [B, T, D] -> hidden [B, T, D] (both residual branches, their norms as the family's
// LayerNorms and NormStyle say; the token mixer attention, or a hybrid's Gated DeltaNet layer's). A sparse layer writes its tokens' routing into `routing` when given.
at::Tensor decoder_layer(const LayerWeights& weights, const at::Tensor& hidden, const TokenPositions& positions,
                         const ModelConfig& config, ActivationCache* cache = nullptr, KvCache* kv_cache = nullptr,
                         Routing* routing = nullptr);

}  // namespace st

#include "model/llama_units.h"

#include <ATen/ATen.h>

#include "model/moe_block.h"
#include "util/errors.h"
#include "util/host_sync.h"

namespace st {
namespace {

WeightGradSink sink_for(const UnitGradSinks& sinks, ModelParam param) { return {sinks[param], sinks.overwrite}; }

// hidden [R, T, D] -> log p of each target [N] (fp32): only target positions are normed and
// go through the lm_head.
at::Tensor head_target_logps(const ModelConfig& config, const UnitWeights& weights, const at::Tensor& hidden,
                             const TokenBatch& batch, const UnitGradSinks& sinks) {
  const at::Tensor selected = hidden.reshape({-1, hidden.size(2)}).index_select(0, batch.target_positions);
  const at::Tensor normed = head_normed(config, weights[ModelParam::final_norm], selected);
  const ModelParam head = lm_head_param(config);
  return chunked_token_logps(normed, weights[head], batch.target_ids, batch.logp_chunk_tokens, sink_for(sinks, head));
}

// hidden [R, T, D] -> each sequence's reward [S] fp32: the final norm and the score at the
// sequence's reward position only (transformers scores every position and picks these).
at::Tensor head_rewards(const ModelConfig& config, const UnitWeights& weights, const at::Tensor& hidden,
                        const TokenBatch& batch) {
  if (!batch.reward_positions.defined()) throw ModelError("score head: the batch has no reward positions");
  const at::Tensor selected = hidden.reshape({-1, hidden.size(2)}).index_select(0, batch.reward_positions);
  const at::Tensor normed = head_normed(config, weights[ModelParam::final_norm], selected);
  return at::linear(normed, weights[ModelParam::score]).view({-1}).to(at::kFloat);
}

// The targets' log-probs placed at their slots of [S, T]: each sequence's line, in position
// order. In the plain layout a sequence's line is its row.
at::Tensor placed_logps(const TokenBatch& batch, const at::Tensor& target_logps) {
  const at::Tensor logps = target_logps.to(at::kFloat);
  const int64_t length = batch.slot_length > 0 ? batch.slot_length : batch.input_ids.size(1);
  return at::zeros({batch.sequences * length}, logps.options())
      .index_copy(0, batch.target_slots, logps)
      .view({batch.sequences, length});
}

// Per sequence: its line summed in position order (deterministic on a GPU, where an index_add
// would sum in any order). A context group's rank returns its lines instead, zero where other
// ranks hold the targets: the group adds them (exact, every slot has one writer) and sums the
// lines in the same order as one rank would.
at::Tensor sequence_sums(const TokenBatch& batch, const at::Tensor& target_logps) {
  const at::Tensor lines = placed_logps(batch, target_logps);
  return batch.positions.context ? lines : lines.sum(1);
}

// Rows that each hold one sequence on one branch (packing found nothing to pack): plain causal
// rows, whose positions are 0..T-1 up to the padding, so attention needs no mask and runs the
// fast causal kernels.
bool one_sequence_per_row(const RowLayout& layout) {
  if (layout.branch_ids.ne(kSharedBranch).any().item<bool>()) return false;
  const at::Tensor segments = layout.segment_ids;
  const at::Tensor first = segments.narrow(1, 0, 1);
  return segments.eq(first).logical_or(segments.eq(kPaddingSegment)).all().item<bool>();
}

// [R, 1, T, T] bool on `device`: query i sees key j <= i of its segment when j is on the shared
// branch or on i's own (row_layout.h).
at::Tensor layout_attention_mask(const RowLayout& layout, const at::Device& device) {
  const at::Tensor segment = to_device_async(layout.segment_ids, device);
  const at::Tensor branch = to_device_async(layout.branch_ids, device);
  const int64_t length = segment.size(1);
  const at::Tensor same_segment = segment.unsqueeze(2).eq(segment.unsqueeze(1));  // [R, query, key]
  const at::Tensor key_branch = branch.unsqueeze(1);
  const at::Tensor visible_branch = key_branch.eq(kSharedBranch).logical_or(key_branch.eq(branch.unsqueeze(2)));
  const at::Tensor causal = at::ones({length, length}, segment.options().dtype(at::kBool)).tril();
  return same_segment.logical_and(visible_branch).logical_and(causal).unsqueeze(1);
}

// [R, 1, T, T] bool: query at position p sees keys at positions above p - window (transformers'
// sliding window), `positions` [R, T] on the device.
at::Tensor window_band(const at::Tensor& positions, int64_t window) {
  return positions.unsqueeze(2).sub(positions.unsqueeze(1)).lt(window).unsqueeze(1);
}

}  // namespace

TokenBatch make_token_batch(const at::Tensor& input_ids, const at::Tensor& targets,
                            const at::Tensor& inverse_frequencies, at::ScalarType compute_dtype,
                            int64_t logp_chunk_tokens, const RowLayout& layout, int64_t sliding_window,
                            AttentionPath attention) {
  if (input_ids.dim() != 2 || targets.sizes() != input_ids.sizes()) {
    throw ModelError("token batch: expected input_ids and targets of the same shape [R, T]");
  }
  if (layout.defined() && layout.position_ids.sizes() != input_ids.sizes()) {
    throw ModelError("token batch: the row layout's shape differs from input_ids [R, T]");
  }
  const at::Device device = inverse_frequencies.device();
  const int64_t length = input_ids.size(1);
  const at::Tensor host_targets = targets.to(at::kCPU, at::kLong).reshape({-1});
  const at::Tensor positions = host_targets.ne(kIgnoreTarget).nonzero().view({-1});
  TokenBatch batch;
  batch.logp_chunk_tokens = logp_chunk_tokens;
  batch.input_ids = to_device_async(input_ids.to(at::kLong), device);
  batch.target_positions = to_device_async(positions, device);
  batch.target_ids = to_device_async(host_targets.index_select(0, positions), device);
  const bool windowed = sliding_window > 0 && sliding_window < length;
  const bool masked = attention == AttentionPath::masked;
  // Rows that start at position 0 and run causally: spans or a mask only where the window cuts.
  auto plain_rows = [&] {
    batch.positions.rope = make_rope_tables(inverse_frequencies, length, compute_dtype);
    if (!windowed) return;
    if (!masked) {
      batch.positions.spans = row_spans(input_ids.size(0), length, sliding_window, device);
      return;
    }
    const at::Tensor steps = at::arange(length, at::TensorOptions().device(device).dtype(at::kLong)).unsqueeze(0);
    const at::Tensor causal = at::ones({length, length}, steps.options().dtype(at::kBool)).tril();
    batch.positions.attention_mask = window_band(steps, sliding_window).logical_and(causal);
  };
  if (!layout.defined()) {
    batch.sequences = input_ids.size(0);
    batch.target_slots = batch.target_positions;
    plain_rows();
    return batch;
  }
  batch.sequences = layout.sequences;
  const at::Tensor sequence = layout.sequence_ids.reshape({-1}).index_select(0, positions);
  batch.target_slots = to_device_async(sequence * length + positions.remainder(length), device);
  if (one_sequence_per_row(layout)) {
    plain_rows();
    return batch;
  }
  const at::Tensor position_ids = to_device_async(layout.position_ids, device);
  batch.positions.rope = make_rope_tables_at(inverse_frequencies, position_ids, compute_dtype);
  if (!masked) {
    batch.positions.spans = layout_spans(layout, windowed ? sliding_window : 0, device);
    if (batch.positions.spans.defined()) return batch;
  }
  batch.positions.attention_mask = layout_attention_mask(layout, device);
  if (windowed) {
    batch.positions.attention_mask = batch.positions.attention_mask.logical_and(window_band(position_ids, sliding_window));
  }
  return batch;
}

void UnitWeights::bind(const ParamKey& key, const at::Tensor& tensor) {
  if (!layer.bind(key, tensor)) (*this)[key.model] = tensor;
}

at::Tensor embedding_rows(const at::Tensor& table, const at::Tensor& ids) {
  if (table.device() == ids.device()) return at::embedding(table, ids);
  return at::embedding(table, ids.to(table.device())).to(ids.device());
}

at::Tensor head_normed(const ModelConfig& config, const at::Tensor& final_norm, const at::Tensor& hidden) {
  return rms_norm(hidden, final_norm, config.rms_norm_eps);
}

at::Tensor head_logits(const ModelConfig& config, const LlamaWeights& weights, const at::Tensor& hidden) {
  return at::linear(head_normed(config, weights.final_norm, hidden), weights.lm_head);
}

UnitRole unit_role(const ModelConfig& config, size_t unit) {
  const size_t run = run_unit_count(config);
  if (unit == 0) return UnitRole::embedding;
  if (unit + 1 < run) return UnitRole::layer;
  return unit + 1 == run ? UnitRole::head : UnitRole::experts;
}

size_t run_unit_count(const ModelConfig& config) { return static_cast<size_t>(config.num_hidden_layers) + 2; }

size_t unit_count(const ModelConfig& config) {
  size_t count = run_unit_count(config);
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) count += config.sparse_layer(layer) ? 1 : 0;
  return count;
}

size_t experts_unit_of(const ModelConfig& config, int64_t layer) {
  if (!config.sparse_layer(layer)) return 0;
  size_t unit = run_unit_count(config);
  for (int64_t before = 0; before < layer; ++before) unit += config.sparse_layer(before) ? 1 : 0;
  return unit;
}

at::Tensor llama_unit_forward(const ModelConfig& config, size_t unit, const UnitWeights& weights,
                              const at::Tensor& input, const TokenBatch& batch, ActivationCache* cache,
                              const UnitGradSinks& sinks, Routing* routing) {
  switch (unit_role(config, unit)) {
    case UnitRole::embedding: return embedding_rows(weights[ModelParam::embed], batch.input_ids);
    case UnitRole::layer: {
      LayerWeights layer = weights.layer;
      layer.layer = static_cast<int64_t>(unit - 1);
      layer.adapter = batch.adapter;
      layer.token_places = batch.token_places;
      layer.expert_exchange = batch.experts;
      return decoder_layer(layer, input, batch.positions, config, cache, nullptr, routing);
    }
    case UnitRole::head:
      if (config.head == ModelHead::score) return head_rewards(config, weights, input, batch);
      return sequence_sums(batch, head_target_logps(config, weights, input, batch, sinks));
    case UnitRole::experts: break;  // runs inside its layer's
  }
  throw ModelError("unit " + std::to_string(unit) + " is not a unit the model runs");
}

void embedding_backward(const TokenBatch& batch, const at::Tensor& grad_output, const UnitGradSinks& sinks) {
  at::Tensor destination = sinks[ModelParam::embed];
  if (!destination.defined()) throw ModelError("embedding backward: no destination for the embedding's gradient");
  if (sinks.overwrite) destination.zero_();
  const at::Tensor rows = grad_output.reshape({-1, grad_output.size(-1)}).to(destination.scalar_type());
  destination.index_add_(0, batch.input_ids.reshape({-1}), rows);
}

UnitWeights unit_params(const LlamaWeights& weights, const ModelConfig& config, size_t unit) {
  UnitWeights params;
  switch (unit_role(config, unit)) {
    case UnitRole::experts: break;  // its layer's weights hold the experts
    case UnitRole::embedding: params[ModelParam::embed] = weights.embed; break;
    case UnitRole::layer: params.layer = weights.layers.at(unit - 1); break;
    case UnitRole::head:
      params[ModelParam::final_norm] = weights.final_norm;
      if (config.head == ModelHead::score) {
        params[ModelParam::score] = weights.score;
      } else {
        params[lm_head_param(config)] = weights.lm_head;
      }
      break;
  }
  return params;
}

namespace {

// Embedding and every layer: [R, T, D] before the head; each sparse layer's routing into
// `routing` when given.
at::Tensor hidden_before_head(const LlamaWeights& weights, const ModelConfig& config, const TokenBatch& batch,
                              std::vector<Routing>* routing = nullptr) {
  const size_t count = run_unit_count(config);
  at::Tensor hidden;
  for (size_t unit = 0; unit + 1 < count; ++unit) {
    const bool sparse = unit_role(config, unit) == UnitRole::layer && config.sparse_layer(static_cast<int64_t>(unit) - 1);
    Routing routed;
    hidden = llama_unit_forward(config, unit, unit_params(weights, config, unit), hidden, batch, nullptr, {},
                                routing != nullptr && sparse ? &routed : nullptr);
    if (routing != nullptr && sparse) routing->push_back(std::move(routed));
  }
  return hidden;
}

}  // namespace

at::Tensor llama_final_hidden(const LlamaWeights& weights, const ModelConfig& config, const at::Tensor& input_ids) {
  const at::Tensor inverse = rope_inverse_frequencies(config).to(weights.embed.device());
  const TokenBatch batch = make_token_batch(input_ids, at::full_like(input_ids, kIgnoreTarget, at::kLong),
                                            inverse, weights.embed.scalar_type(), 1);
  return head_normed(config, weights.final_norm, hidden_before_head(weights, config, batch));
}

at::Tensor llama_target_logps(const LlamaWeights& weights, const ModelConfig& config, const TokenBatch& batch,
                              std::vector<Routing>* routing) {
  const at::Tensor hidden = hidden_before_head(weights, config, batch, routing);
  return head_target_logps(config, unit_params(weights, config, run_unit_count(config) - 1), hidden, batch, {});
}

at::Tensor llama_sequence_logps(const LlamaWeights& weights, const ModelConfig& config, const TokenBatch& batch) {
  return sequence_sums(batch, llama_target_logps(weights, config, batch));
}

at::Tensor llama_sequence_rewards(const LlamaWeights& weights, const ModelConfig& config, const TokenBatch& batch) {
  const at::Tensor hidden = hidden_before_head(weights, config, batch);
  return head_rewards(config, unit_params(weights, config, run_unit_count(config) - 1), hidden, batch);
}

}  // namespace st

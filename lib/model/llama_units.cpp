#include "model/llama_units.h"

#include <ATen/ATen.h>

#include <cmath>

#include "model/moe_block.h"
#include "util/errors.h"
#include "util/host_sync.h"

namespace st {
namespace {

WeightGradSink sink_for(const UnitGradSinks& sinks, ModelParam param) { return {sinks[param], sinks.overwrite}; }

// hidden [R, T, D] -> log p of each target [N] (fp32), and their entropies where the batch asks:
// only target positions are normed and go through the lm_head.
TokenLogps head_target_logps(const ModelConfig& config, const UnitWeights& weights, const at::Tensor& hidden,
                             const TokenBatch& batch, const UnitGradSinks& sinks) {
  const at::Tensor selected = hidden.reshape({-1, hidden.size(2)}).index_select(0, batch.target_positions);
  const at::Tensor normed = head_normed(config, weights[ModelParam::final_norm], selected);
  const ModelParam head = lm_head_param(config);
  TokenLogpOptions options;
  options.chunk_tokens = batch.logp_chunk_tokens;
  options.temperature = batch.logit_temperature;
  options.entropies = batch.head_output == HeadOutput::token_lines_with_entropies;
  options.sink = sink_for(sinks, head);
  return chunked_token_logps(normed, weights[head], batch.target_ids, options);
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

// What the head returns (batch.head_output). Sums: each sequence's line summed in position order
// (deterministic on a GPU, where an index_add would sum in any order). A context group's rank
// returns its lines instead, zero where other ranks hold the targets: the group adds them (exact,
// every slot has one writer) and sums the lines in the same order as one rank would.
at::Tensor head_output(const TokenBatch& batch, const TokenLogps& targets) {
  const at::Tensor logps = placed_logps(batch, targets.logps);
  if (batch.head_output == HeadOutput::sequence_sums) return batch.positions.context ? logps : logps.sum(1);
  std::vector<at::Tensor> lines{logps, placed_logps(batch, at::ones_like(targets.logps))};  // HeadLine order
  if (batch.head_output == HeadOutput::token_lines_with_entropies) lines.push_back(placed_logps(batch, targets.entropies));
  return at::stack(lines);
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

// One kind of layer's positions: rotary tables at the tokens' positions and which keys each
// query sees (spans or a mask only where rows hold several sequences or the window cuts).
// `other`: another kind's positions of the same rows, whose spans serve under this kind's window.
TokenPositions layer_positions(const at::Tensor& input_ids, const RowLayout& layout, bool plain,
                               const LayerAttention& kind, at::ScalarType compute_dtype, AttentionPath attention,
                               const TokenPositions* other = nullptr) {
  const at::Device device = kind.inverse_frequencies.device();
  const int64_t length = input_ids.size(1);
  const bool windowed = kind.window > 0 && kind.window < length;
  const bool masked = attention == AttentionPath::masked;
  const bool shared = other != nullptr && other->spans.defined();
  TokenPositions positions;
  if (plain) {  // rows that start at position 0 and run causally
    positions.rope = make_rope_tables(kind.inverse_frequencies, length, compute_dtype);
    if (!windowed) return positions;
    if (!masked) {
      positions.spans = shared ? with_window(other->spans, kind.window)
                               : row_spans(input_ids.size(0), length, kind.window, device);
      return positions;
    }
    const at::Tensor steps = at::arange(length, at::TensorOptions().device(device).dtype(at::kLong)).unsqueeze(0);
    const at::Tensor causal = at::ones({length, length}, steps.options().dtype(at::kBool)).tril();
    positions.attention_mask = window_band(steps, kind.window).logical_and(causal);
    return positions;
  }
  const at::Tensor position_ids = to_device_async(layout.position_ids, device);
  positions.rope = make_rope_tables_at(kind.inverse_frequencies, position_ids, compute_dtype);
  // The layout's runs, walked once per micro-batch: the recurrent mixers' sequences, and the spans
  // (empty: a layout collate does not build, which keeps the mask).
  positions.runs = other ? other->runs : layout_runs(layout).value_or(std::vector<SequenceRun>{});
  if (!masked && !positions.runs->empty()) {
    const int64_t window = windowed ? kind.window : 0;
    positions.spans = shared ? with_window(other->spans, window) : run_spans(*positions.runs, window, device);
    return positions;
  }
  positions.attention_mask = layout_attention_mask(layout, device);
  if (windowed) positions.attention_mask = positions.attention_mask.logical_and(window_band(position_ids, kind.window));
  return positions;
}

}  // namespace

ModelAttention model_attention(const ModelConfig& config, const at::Device& device) {
  ModelAttention kinds;
  kinds.full.inverse_frequencies = rope_inverse_frequencies(config).to(device);
  if (!config.layers_differ()) {
    kinds.full.window = config.sliding_window;
    return kinds;
  }
  kinds.sliding.inverse_frequencies = local_rope_inverse_frequencies(config).to(device);
  kinds.sliding.window = config.sliding_window;
  return kinds;
}

const TokenPositions& TokenBatch::positions_of(const ModelConfig& config, int64_t layer) const {
  return config.layers_differ() && config.sliding_layer(layer) ? sliding_positions : positions;
}

TokenBatch make_token_batch(const at::Tensor& input_ids, const at::Tensor& targets,
                            const at::Tensor& inverse_frequencies, at::ScalarType compute_dtype,
                            int64_t logp_chunk_tokens, const RowLayout& layout, int64_t sliding_window,
                            AttentionPath attention) {
  ModelAttention kinds;
  kinds.full = {inverse_frequencies, sliding_window};
  return make_token_batch(input_ids, targets, kinds, compute_dtype, logp_chunk_tokens, layout, attention);
}

TokenBatch make_token_batch(const at::Tensor& input_ids, const at::Tensor& targets, const ModelAttention& kinds,
                            at::ScalarType compute_dtype, int64_t logp_chunk_tokens, const RowLayout& layout,
                            AttentionPath attention) {
  if (input_ids.dim() != 2 || targets.sizes() != input_ids.sizes()) {
    throw ModelError("token batch: expected input_ids and targets of the same shape [R, T]");
  }
  if (layout.defined() && layout.position_ids.sizes() != input_ids.sizes()) {
    throw ModelError("token batch: the row layout's shape differs from input_ids [R, T]");
  }
  const at::Device device = kinds.full.inverse_frequencies.device();
  const int64_t length = input_ids.size(1);
  const at::Tensor host_targets = targets.to(at::kCPU, at::kLong).reshape({-1});
  const at::Tensor positions = host_targets.ne(kIgnoreTarget).nonzero().view({-1});
  TokenBatch batch;
  batch.logp_chunk_tokens = logp_chunk_tokens;
  batch.input_ids = to_device_async(input_ids.to(at::kLong), device);
  batch.target_positions = to_device_async(positions, device);
  batch.target_ids = to_device_async(host_targets.index_select(0, positions), device);
  bool plain = true;
  if (!layout.defined()) {
    batch.sequences = input_ids.size(0);
    batch.target_slots = batch.target_positions;
  } else {
    batch.sequences = layout.sequences;
    const at::Tensor sequence = layout.sequence_ids.reshape({-1}).index_select(0, positions);
    batch.target_slots = to_device_async(sequence * length + positions.remainder(length), device);
    plain = one_sequence_per_row(layout);
  }
  batch.positions = layer_positions(input_ids, layout, plain, kinds.full, compute_dtype, attention);
  if (kinds.sliding.inverse_frequencies.defined()) {
    batch.sliding_positions =
        layer_positions(input_ids, layout, plain, kinds.sliding, compute_dtype, attention, &batch.positions);
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

namespace {

// embed_tokens' factor: sqrt(hidden_size) rounded to `dtype` (transformers' embed_scale buffer
// cast to the weight's dtype); undefined where the family does not scale.
at::Tensor embedding_scale(const ModelConfig& config, const at::Tensor& like) {
  if (!family_of(config.model_type).scaled_embedding) return {};
  return at::scalar_tensor(std::sqrt(static_cast<double>(config.hidden_size)), like.options());
}

}  // namespace

at::Tensor embed_tokens(const ModelConfig& config, const at::Tensor& table, const at::Tensor& ids) {
  const at::Tensor rows = embedding_rows(table, ids);
  const at::Tensor scale = embedding_scale(config, rows);
  return scale.defined() ? rows * scale : rows;
}

at::Tensor head_normed(const ModelConfig& config, const at::Tensor& final_norm, const at::Tensor& hidden) {
  return rms_norm(hidden, final_norm, config.rms_norm_eps, family_of(config.model_type).norm_style);
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
    case UnitRole::embedding: return embed_tokens(config, weights[ModelParam::embed], batch.input_ids);
    case UnitRole::layer: {
      LayerWeights layer = weights.layer;
      layer.layer = static_cast<int64_t>(unit - 1);
      layer.adapter = batch.adapter;
      layer.token_places = batch.token_places;
      layer.expert_exchange = batch.experts;
      return decoder_layer(layer, input, batch.positions_of(config, layer.layer), config, cache, nullptr, routing);
    }
    case UnitRole::head:
      if (config.head == ModelHead::score) return head_rewards(config, weights, input, batch);
      return head_output(batch, head_target_logps(config, weights, input, batch, sinks));
    case UnitRole::experts: break;  // runs inside its layer's
  }
  throw ModelError("unit " + std::to_string(unit) + " is not a unit the model runs");
}

void embedding_backward(const ModelConfig& config, const TokenBatch& batch, const at::Tensor& grad_output,
                        const UnitGradSinks& sinks) {
  at::Tensor destination = sinks[ModelParam::embed];
  if (!destination.defined()) throw ModelError("embedding backward: no destination for the embedding's gradient");
  if (sinks.overwrite) destination.zero_();
  const at::Tensor scale = embedding_scale(config, grad_output);
  const at::Tensor scaled = scale.defined() ? grad_output * scale : grad_output;
  const at::Tensor rows = scaled.reshape({-1, grad_output.size(-1)}).to(destination.scalar_type());
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

// The whole model's target log-probs (and entropies where the batch asks), through the head unit.
TokenLogps whole_model_target_logps(const LlamaWeights& weights, const ModelConfig& config, const TokenBatch& batch,
                                    std::vector<Routing>* routing = nullptr) {
  const at::Tensor hidden = hidden_before_head(weights, config, batch, routing);
  return head_target_logps(config, unit_params(weights, config, run_unit_count(config) - 1), hidden, batch, {});
}

}  // namespace

at::Tensor llama_final_hidden(const LlamaWeights& weights, const ModelConfig& config, const at::Tensor& input_ids) {
  const TokenBatch batch = make_token_batch(input_ids, at::full_like(input_ids, kIgnoreTarget, at::kLong),
                                            model_attention(config, weights.embed.device()),
                                            weights.embed.scalar_type(), 1);
  return head_normed(config, weights.final_norm, hidden_before_head(weights, config, batch));
}

at::Tensor llama_target_logps(const LlamaWeights& weights, const ModelConfig& config, const TokenBatch& batch,
                              std::vector<Routing>* routing) {
  return whole_model_target_logps(weights, config, batch, routing).logps;
}

at::Tensor llama_sequence_logps(const LlamaWeights& weights, const ModelConfig& config, const TokenBatch& batch) {
  return head_output(batch, whole_model_target_logps(weights, config, batch));
}

int64_t head_line_count(HeadOutput output) {
  switch (output) {
    case HeadOutput::sequence_sums: return 0;
    case HeadOutput::token_lines: return 2;
    case HeadOutput::token_lines_with_entropies: return 3;
  }
  return 0;
}

at::Tensor llama_sequence_rewards(const LlamaWeights& weights, const ModelConfig& config, const TokenBatch& batch) {
  const at::Tensor hidden = hidden_before_head(weights, config, batch);
  return head_rewards(config, unit_params(weights, config, run_unit_count(config) - 1), hidden, batch);
}

}  // namespace st

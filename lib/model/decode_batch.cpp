#include "model/decode_batch.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "model/generation.h"
#include "model/rope.h"

namespace st {
namespace {

at::Tensor on_device(const std::vector<int64_t>& values, const at::Device& device) {
  return at::tensor(values, at::kLong).to(device);
}

// Rows `rows` of `into` (dim 0) from rows `from_rows` of `from`; with a `columns` dim, into
// the first columns there (a longer cache's).
void copy_rows(at::Tensor& into, const at::Tensor& rows, const at::Tensor& from, const at::Tensor& from_rows,
               int64_t columns = 0) {
  at::Tensor target = columns > 0 ? into.narrow(columns, 0, from.size(columns)) : into;
  target.index_copy_(0, rows, from.index_select(0, from_rows));
}

}  // namespace

DecodeBatch::DecodeBatch(const LlamaWeights& weights, const ModelConfig& config, int64_t rows, int64_t capacity)
    : weights_(weights),
      config_(config),
      kinds_(model_attention(config, weights.embed.device())),
      capacity_(capacity),
      columns_(static_cast<size_t>(rows), 0),
      positions_(static_cast<size_t>(rows), 0),
      placed_(static_cast<size_t>(rows), false) {
  const auto options = weights.embed.options();
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    const bool recurrent = config.gated_delta_layer(layer);  // its carry instead, shaped by the first prefill
    cache_.keys.push_back(recurrent ? at::Tensor()
                                    : at::zeros({rows, config.num_key_value_heads, capacity, config.head_dim}, options));
    cache_.values.push_back(recurrent ? at::Tensor() : at::zeros_like(cache_.keys.back()));
  }
  cache_.carries.resize(static_cast<size_t>(config.num_hidden_layers));
  key_positions_ = at::zeros({rows, capacity}, options.dtype(at::kLong));
  key_valid_ = at::zeros({rows, capacity}, options.dtype(at::kBool));
}

at::Tensor DecodeBatch::forward(const at::Tensor& ids, const at::Tensor& query_positions,
                                const at::Tensor& key_positions, const at::Tensor& key_valid, KvCache& cache) const {
  const at::ScalarType dtype = weights_.embed.scalar_type();
  const auto kind_positions = [&](const LayerAttention& kind) {
    TokenPositions where;
    where.rope = make_rope_tables_at(kind.inverse_frequencies, query_positions, dtype);
    where.attention_mask = decode_attention_mask(query_positions, key_positions, key_valid, kind.window);
    return where;
  };
  TokenBatch positions;
  positions.positions = kind_positions(kinds_.full);
  if (kinds_.sliding.inverse_frequencies.defined()) positions.sliding_positions = kind_positions(kinds_.sliding);
  at::Tensor hidden = embed_tokens(config_, weights_.embed, ids);
  for (const LayerWeights& layer : weights_.layers) {
    hidden = decoder_layer(layer, hidden, positions.positions_of(config_, layer.layer), config_, nullptr, &cache);
  }
  const at::Tensor last = hidden.select(1, hidden.size(1) - 1);
  return head_logits(config_, weights_, last).to(at::kFloat).cpu();
}

PrefilledPrompts DecodeBatch::prefill(const std::vector<std::vector<int64_t>>& prompts, size_t first,
                                      size_t last) const {
  const auto count = static_cast<int64_t>(last - first);
  int64_t longest = 0;
  for (size_t i = first; i < last; ++i) longest = std::max(longest, static_cast<int64_t>(prompts[i].size()));
  at::Tensor ids = at::zeros({count, longest}, at::kLong);
  at::Tensor valid = at::zeros({count, longest}, at::kBool);
  at::Tensor positions = at::zeros({count, longest}, at::kLong);
  PrefilledPrompts out;
  out.first = first;
  for (int64_t r = 0; r < count; ++r) {
    const auto& prompt = prompts[first + static_cast<size_t>(r)];
    const auto length = static_cast<int64_t>(prompt.size());
    const int64_t pad = longest - length;
    ids[r].narrow(0, pad, length).copy_(at::tensor(prompt, at::kLong));
    valid[r].narrow(0, pad, length).fill_(true);
    positions[r].narrow(0, pad, length).copy_(at::arange(length, at::kLong));
    out.next.push_back(length);
  }
  const at::Device device = weights_.embed.device();
  out.key_positions = positions.to(device);
  out.key_valid = valid.to(device);
  for (size_t layer = 0; layer < weights_.layers.size(); ++layer) {
    const bool recurrent = config_.gated_delta_layer(static_cast<int64_t>(layer));
    out.cache.keys.push_back(recurrent ? at::Tensor()
                                       : at::zeros({count, config_.num_key_value_heads, longest, config_.head_dim},
                                                   weights_.embed.options()));
    out.cache.values.push_back(recurrent ? at::Tensor() : at::zeros_like(out.cache.keys.back()));
  }
  out.cache.carries.resize(weights_.layers.size());
  out.cache.new_tokens_valid = out.key_valid;
  out.logits = forward(ids.to(device), out.key_positions, out.key_positions, out.key_valid, out.cache);
  out.cache.new_tokens_valid = at::Tensor();
  out.cache.length = longest;
  return out;
}

void DecodeBatch::place(const PrefilledPrompts& prompts, const std::vector<int64_t>& prompt_rows,
                        const std::vector<int64_t>& rows) {
  const at::Device device = weights_.embed.device();
  const at::Tensor into = on_device(rows, device);
  const at::Tensor from = on_device(prompt_rows, device);
  for (size_t layer = 0; layer < cache_.keys.size(); ++layer) {
    if (cache_.keys[layer].defined()) {  // [rows, kv_heads, capacity, head_dim]: the first columns
      copy_rows(cache_.keys[layer], into, prompts.cache.keys[layer], from, 2);
      copy_rows(cache_.values[layer], into, prompts.cache.values[layer], from, 2);
      continue;
    }
    GatedDeltaCarry& carry = cache_.carries[layer];
    const GatedDeltaCarry& prompt = prompts.cache.carries[layer];
    const auto widen = [&](at::Tensor& tensor, const at::Tensor& like) {  // this batch's rows of the prompts' shape
      if (tensor.defined()) return;
      std::vector<int64_t> sizes = like.sizes().vec();
      sizes[0] = this->rows();
      tensor = at::zeros(sizes, like.options());
    };
    widen(carry.conv_inputs, prompt.conv_inputs);
    widen(carry.state, prompt.state);
    copy_rows(carry.conv_inputs, into, prompt.conv_inputs, from);
    copy_rows(carry.state, into, prompt.state, from);
  }
  key_valid_.index_fill_(0, into, false);  // the columns past the prompt held an earlier sequence
  copy_rows(key_valid_, into, prompts.key_valid, from, 1);
  copy_rows(key_positions_, into, prompts.key_positions, from, 1);
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto row = static_cast<size_t>(rows[i]);
    columns_[row] = prompts.cache.length;
    positions_[row] = prompts.next[static_cast<size_t>(prompt_rows[i])];
    placed_[row] = true;
  }
}

void DecodeBatch::release(int64_t row) {
  const auto r = static_cast<size_t>(row);
  columns_[r] = 0;  // its own first column at position 0: one key it may attend, so no empty softmax
  positions_[r] = 0;
  placed_[r] = false;
}

void DecodeBatch::keep(const std::vector<int64_t>& kept) {
  const at::Tensor rows = on_device(kept, weights_.embed.device());
  const auto select = [&](at::Tensor& tensor) {
    if (tensor.defined()) tensor = tensor.index_select(0, rows);
  };
  for (at::Tensor& keys : cache_.keys) select(keys);
  for (at::Tensor& values : cache_.values) select(values);
  for (GatedDeltaCarry& carry : cache_.carries) {
    select(carry.conv_inputs);
    select(carry.state);
  }
  select(key_positions_);
  select(key_valid_);
  std::vector<int64_t> columns, positions;
  std::vector<bool> placed;
  for (const int64_t row : kept) {
    columns.push_back(columns_[static_cast<size_t>(row)]);
    positions.push_back(positions_[static_cast<size_t>(row)]);
    placed.push_back(placed_[static_cast<size_t>(row)]);
  }
  columns_ = std::move(columns);
  positions_ = std::move(positions);
  placed_ = std::move(placed);
}

at::Tensor DecodeBatch::step(const std::vector<int64_t>& tokens) {
  const at::Device device = weights_.embed.device();
  const at::Tensor columns = on_device(columns_, device).unsqueeze(1);      // [B, 1]
  const at::Tensor positions = on_device(positions_, device).unsqueeze(1);  // [B, 1]
  key_positions_.scatter_(1, columns, positions);
  key_valid_.scatter_(1, columns, true);
  const int64_t used = *std::max_element(columns_.begin(), columns_.end()) + 1;
  cache_.columns = columns.squeeze(1);
  cache_.length = used;
  const at::Tensor logits = forward(on_device(tokens, device).unsqueeze(1), positions, key_positions_.narrow(1, 0, used),
                                    key_valid_.narrow(1, 0, used), cache_);
  for (size_t r = 0; r < columns_.size(); ++r) {
    if (!placed_[r]) continue;
    ++columns_[r];
    ++positions_[r];
  }
  return logits;
}

}  // namespace st

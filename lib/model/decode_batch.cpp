#include "model/decode_batch.h"

#include <ATen/ATen.h>

#include <algorithm>

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

// Zeroed keys and values for `rows` rows of `capacity` tokens in every attention layer; a Gated
// DeltaNet layer's carry instead, left undefined (its mixer step makes it).
KvCache empty_cache(const LlamaWeights& weights, const ModelConfig& config, int64_t rows, int64_t capacity) {
  KvCache cache;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    const bool recurrent = config.gated_delta_layer(layer);
    cache.keys.push_back(recurrent ? at::Tensor()
                                   : at::zeros({rows, config.num_key_value_heads, capacity, config.head_dim},
                                               weights.embed.options()));
    cache.values.push_back(recurrent ? at::Tensor() : at::zeros_like(cache.keys.back()));
  }
  cache.carries.resize(static_cast<size_t>(config.num_hidden_layers));
  return cache;
}

}  // namespace

at::Tensor decode_attention_mask(const at::Tensor& query_positions, const at::Tensor& key_positions,
                                 const at::Tensor& key_valid, int64_t sliding_window) {
  const at::Tensor distance = query_positions.unsqueeze(2) - key_positions.unsqueeze(1);  // [B, Tq, Tk]
  at::Tensor mask = distance.ge(0).logical_and(key_valid.unsqueeze(1));
  if (sliding_window > 0) mask = mask.logical_and(distance.lt(sliding_window));
  if (query_positions.size(1) == key_positions.size(1)) {  // a prefill: padding sees itself
    const at::Tensor self = at::eye(key_positions.size(1), mask.options()).unsqueeze(0);
    mask = mask.logical_or(self.logical_and(key_valid.logical_not().unsqueeze(2)));
  }
  return mask.unsqueeze(1);
}

DecodeBatch::DecodeBatch(const LlamaWeights& weights, const ModelConfig& config, int64_t rows, int64_t capacity)
    : weights_(weights),
      config_(config),
      kinds_(model_attention(config, weights.embed.device())),
      cache_(empty_cache(weights, config, rows, capacity)),  // a carry's shape comes with the first prefill
      places_(static_cast<size_t>(rows)) {
  key_positions_ = at::zeros({rows, capacity}, weights.embed.options().dtype(at::kLong));
  key_valid_ = at::zeros({rows, capacity}, weights.embed.options().dtype(at::kBool));
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
  out.cache = empty_cache(weights_, config_, count, longest);
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
    places_[static_cast<size_t>(rows[i])] = {prompts.cache.length, prompts.next[static_cast<size_t>(prompt_rows[i])],
                                             true};
  }
}

void DecodeBatch::release(int64_t row) {
  // Its own first column at position 0: one key it may attend, so no empty softmax.
  places_[static_cast<size_t>(row)] = Place{};
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
  std::vector<Place> places;
  for (const int64_t row : kept) places.push_back(places_[static_cast<size_t>(row)]);
  places_ = std::move(places);
}

at::Tensor DecodeBatch::step(const std::vector<int64_t>& tokens) {
  const at::Device device = weights_.embed.device();
  std::vector<int64_t> column_list, position_list;
  for (const Place& place : places_) {
    column_list.push_back(place.column);
    position_list.push_back(place.position);
  }
  const at::Tensor columns = on_device(column_list, device).unsqueeze(1);      // [B, 1]
  const at::Tensor positions = on_device(position_list, device).unsqueeze(1);  // [B, 1]
  key_positions_.scatter_(1, columns, positions);
  key_valid_.scatter_(1, columns, true);
  const int64_t used = *std::max_element(column_list.begin(), column_list.end()) + 1;
  cache_.columns = columns.squeeze(1);
  cache_.length = used;
  const at::Tensor logits = forward(on_device(tokens, device).unsqueeze(1), positions, key_positions_.narrow(1, 0, used),
                                    key_valid_.narrow(1, 0, used), cache_);
  for (Place& place : places_) {
    if (!place.placed) continue;
    ++place.column;
    ++place.position;
  }
  return logits;
}

}  // namespace st

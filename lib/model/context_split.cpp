#include "model/context_split.h"

#include <ATen/ATen.h>

#include <vector>

#include "model/attention_spans.h"
#include "util/errors.h"
#include "util/host_sync.h"

namespace st {
namespace {

// Appends `extra` columns of `fill` to [R, T].
at::Tensor pad_columns(const at::Tensor& rows, int64_t extra, int64_t fill) {
  if (extra == 0) return rows;
  return at::cat({rows, at::full({rows.size(0), extra}, fill, rows.options())}, 1);
}

RowLayout pad_layout(const RowLayout& layout, int64_t extra) {
  if (extra == 0) return layout;
  const RowLayout padding = padding_row_layout(layout.position_ids.size(0), extra);
  RowLayout padded = layout;
  padded.position_ids = at::cat({layout.position_ids.to(at::kLong), padding.position_ids}, 1);
  padded.segment_ids = at::cat({layout.segment_ids.to(at::kLong), padding.segment_ids}, 1);
  padded.branch_ids = at::cat({layout.branch_ids.to(at::kLong), padding.branch_ids}, 1);
  padded.sequence_ids = at::cat({layout.sequence_ids.to(at::kLong), padding.sequence_ids}, 1);
  return padded;
}

// Where a token of the padded rows lands in the group's gathered tensor: the ranks' local
// tokens in rank order, each rank's [R, local length] flattened. Inverted from
// context_positions, the one place that says which rank holds which position.
class GatheredPlaces {
 public:
  GatheredPlaces(int64_t rows, int64_t length, int64_t parts)
      : rows_(rows), length_(length), local_length_(length / parts), owner_(length), local_(length) {
    for (int64_t rank = 0; rank < parts; ++rank) {
      const std::vector<int64_t> held = context_positions(length, parts, rank);
      for (size_t j = 0; j < held.size(); ++j) {
        owner_[static_cast<size_t>(held[j])] = rank;
        local_[static_cast<size_t>(held[j])] = static_cast<int64_t>(j);
      }
    }
  }

  int64_t length() const { return length_; }
  int64_t owner(int64_t t) const { return owner_[static_cast<size_t>(t)]; }
  int64_t of(int64_t flat) const {
    const int64_t r = flat / length_, t = flat % length_;
    return owner(t) * rows_ * local_length_ + r * local_length_ + local_[static_cast<size_t>(t)];
  }

 private:
  int64_t rows_, length_, local_length_;
  std::vector<int64_t> owner_, local_;  // by position of the padded row
};

// The whole rows' spans cut to this rank's queries: each run of local queries of a span is a
// span whose keys are the span's key list up to its last query (still aligned at the end).
AttentionSpans local_spans(const AttentionSpans& whole, const GatheredPlaces& places, int64_t rank,
                           const at::Device& device) {
  std::vector<int64_t> whole_keys;
  if (whole.key_tokens.defined()) {
    const at::Tensor keys = whole.key_tokens.to(at::kCPU).contiguous();
    whole_keys.assign(keys.data_ptr<int64_t>(), keys.data_ptr<int64_t>() + keys.numel());
  }
  std::vector<int64_t> query_starts{0}, key_starts{0}, key_tokens;
  for (int64_t p = 0; p < whole.count(); ++p) {
    const auto s = static_cast<size_t>(p);
    const int64_t first = whole.query_starts[s], queries = whole.query_starts[s + 1] - first;
    const int64_t key_first = whole.key_starts[s], keys = whole.key_starts[s + 1] - key_first;
    const auto mine = [&](int64_t i) { return places.owner((first + i) % places.length()) == rank; };
    for (int64_t i = 0; i < queries;) {
      if (!mine(i)) {
        ++i;
        continue;
      }
      int64_t end = i;
      while (end < queries && mine(end)) ++end;
      for (int64_t j = 0; j < keys - queries + end; ++j) {
        const int64_t key = key_first + j;
        key_tokens.push_back(places.of(whole_keys.empty() ? key : whole_keys[static_cast<size_t>(key)]));
      }
      query_starts.push_back(query_starts.back() + end - i);
      key_starts.push_back(static_cast<int64_t>(key_tokens.size()));
      i = end;
    }
  }
  return spans_from_offsets(std::move(query_starts), std::move(key_starts), &key_tokens, whole.window, device);
}

}  // namespace

int64_t context_row_length(int64_t length, int64_t parts) {
  const int64_t chunks = 2 * parts;
  return (length + chunks - 1) / chunks * chunks;
}

std::vector<int64_t> context_positions(int64_t padded_length, int64_t parts, int64_t rank) {
  const int64_t chunk = padded_length / (2 * parts);
  std::vector<int64_t> positions;
  for (const int64_t c : {rank, 2 * parts - 1 - rank}) {
    for (int64_t t = c * chunk; t < (c + 1) * chunk; ++t) positions.push_back(t);
  }
  return positions;
}

TokenBatch make_context_token_batch(const at::Tensor& input_ids, const at::Tensor& targets,
                                    const at::Tensor& inverse_frequencies, at::ScalarType compute_dtype,
                                    int64_t logp_chunk_tokens, const RowLayout& layout, int64_t sliding_window,
                                    const std::shared_ptr<ContextExchange>& exchange) {
  ModelAttention kinds;
  kinds.full = {inverse_frequencies, sliding_window};
  return make_context_token_batch(input_ids, targets, kinds, compute_dtype, logp_chunk_tokens, layout, exchange);
}

TokenBatch make_context_token_batch(const at::Tensor& input_ids, const at::Tensor& targets, const ModelAttention& kinds,
                                    at::ScalarType compute_dtype, int64_t logp_chunk_tokens, const RowLayout& layout,
                                    const std::shared_ptr<ContextExchange>& exchange) {
  if (input_ids.dim() != 2 || targets.sizes() != input_ids.sizes()) {
    throw ModelError("token batch: expected input_ids and targets of the same shape [R, T]");
  }
  const int64_t parts = exchange->size(), rank = exchange->rank();
  const int64_t rows = input_ids.size(0), length = context_row_length(input_ids.size(1), parts);
  const int64_t extra = length - input_ids.size(1);
  const at::Tensor ids = pad_columns(input_ids.to(at::kCPU, at::kLong), extra, 0);
  const at::Tensor all_targets = pad_columns(targets.to(at::kCPU, at::kLong), extra, kIgnoreTarget);
  const RowLayout padded = layout.defined() ? pad_layout(layout, extra) : RowLayout{};
  const std::vector<int64_t> positions = context_positions(length, parts, rank);
  const at::Tensor place = at::tensor(positions, at::kLong);
  const auto local_length = static_cast<int64_t>(positions.size());
  const GatheredPlaces places(rows, length, parts);

  const at::Device device = kinds.full.inverse_frequencies.device();
  const at::Tensor local_targets = all_targets.index_select(1, place).reshape({-1});
  const at::Tensor targeted = local_targets.ne(kIgnoreTarget).nonzero().view({-1});
  const at::Tensor sequence = padded.defined()
                                  ? padded.sequence_ids.index_select(1, place).reshape({-1}).index_select(0, targeted)
                                  : targeted.div(local_length, "floor");
  const at::Tensor row_position = place.index_select(0, targeted.remainder(local_length));
  TokenBatch batch;
  batch.logp_chunk_tokens = logp_chunk_tokens;
  batch.input_ids = to_device_async(ids.index_select(1, place), device);
  batch.target_positions = to_device_async(targeted, device);
  batch.target_ids = to_device_async(local_targets.index_select(0, targeted), device);
  batch.target_slots = to_device_async(sequence * length + row_position, device);
  batch.slot_length = length;
  batch.sequences = padded.defined() ? padded.sequences : rows;
  const at::Tensor position_ids = to_device_async(
      (padded.defined() ? padded.position_ids.index_select(1, place) : place.unsqueeze(0).expand({rows, local_length}))
          .contiguous(),
      device);
  // The whole rows' spans cut to this rank's queries, once: each kind of layer reads them under
  // its own window.
  const at::Device host(at::kCPU);
  const AttentionSpans whole = padded.defined() ? layout_spans(padded, 0, host) : row_spans(rows, length, 0, host);
  if (!whole.defined()) {
    throw ModelError("context parallelism: these rows' layout has no attention spans (a branch before its prompt)");
  }
  const AttentionSpans local = local_spans(whole, places, rank, device);
  if (local.query_starts.back() != rows * local_length) {
    throw ModelError("context parallelism: the local spans do not cover this rank's tokens");
  }
  const auto kind_positions = [&](const LayerAttention& kind) {
    TokenPositions where;
    where.rope = make_rope_tables_at(kind.inverse_frequencies, position_ids, compute_dtype);
    where.spans = with_window(local, kind.window > 0 && kind.window < length ? kind.window : 0);
    where.context = exchange;
    return where;
  };
  batch.positions = kind_positions(kinds.full);
  if (kinds.sliding.inverse_frequencies.defined()) batch.sliding_positions = kind_positions(kinds.sliding);
  // LoRA dropout hashes each token's place in the unpadded rows, as one rank holding them would.
  const int64_t whole_length = input_ids.size(1);
  batch.token_places =
      to_device_async(at::arange(rows, at::kLong).unsqueeze(1).mul(whole_length).add(place.unsqueeze(0)).reshape({-1}),
                      device);
  return batch;
}

}  // namespace st

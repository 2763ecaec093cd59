#include "data/packed_rows.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>

#include "data/padded_rows.h"

namespace st {
namespace {

struct Token {
  int64_t id = 0, position = 0, branch = kSharedBranch;
  int64_t sequence = -1;  // the output sequence of this position's target
  int64_t target = kIgnoreTarget;
};

// One stretch of tokens that must sit whole in one row.
struct Segment {
  std::vector<Token> tokens;
  std::vector<int64_t> causal_lengths;  // for the FLOP count
};

// Appends prompt[from:] + response on `branch` with positions from `first_position`; the
// targets predict the (trained) response tokens (position t -> token t + 1) for `sequence`.
void append_branch(Segment& segment, const std::vector<int32_t>& prompt, size_t from, const std::vector<int32_t>& response,
                   int64_t branch, int64_t sequence, const std::vector<uint8_t>* loss_mask = nullptr) {
  const size_t begin = segment.tokens.size();
  int64_t position = static_cast<int64_t>(from);
  for (size_t t = from; t < prompt.size(); ++t) segment.tokens.push_back({prompt[t], position++, branch});
  for (int32_t id : response) segment.tokens.push_back({id, position++, branch});
  // A target wherever the next token is a response token of this branch.
  const size_t response_begin = begin + (prompt.size() - std::min(from, prompt.size()));
  const size_t first_target = response_begin > begin ? response_begin - 1 : begin;
  for (size_t t = first_target; t + 1 < segment.tokens.size(); ++t) {
    if (!trained(loss_mask, t + 1 - response_begin)) continue;
    segment.tokens[t].target = segment.tokens[t + 1].id;
    segment.tokens[t].sequence = sequence;
  }
  segment.causal_lengths.push_back(static_cast<int64_t>(segment.tokens.size() - begin));
}

std::vector<Segment> make_segments(const std::vector<Pair>& pairs, PairKind kind, bool share_prompt) {
  const auto count = static_cast<int64_t>(pairs.size());
  std::vector<Segment> segments;
  for (int64_t i = 0; i < count; ++i) {
    const Pair& pair = pairs[static_cast<size_t>(i)];
    Segment segment;
    if (sequences_of(kind) == 2 && share_prompt) {
      // prompt[:-1] is shared; its last token heads each branch.
      const size_t shared = pair.prompt.empty() ? 0 : pair.prompt.size() - 1;
      for (size_t t = 0; t < shared; ++t) {
        segment.tokens.push_back({pair.prompt[t], static_cast<int64_t>(t), kSharedBranch});
      }
      append_branch(segment, pair.prompt, shared, pair.chosen, kChosenBranch, i);
      segment.causal_lengths.back() += static_cast<int64_t>(shared);
      append_branch(segment, pair.prompt, shared, pair.rejected, kRejectedBranch, count + i);
      segments.push_back(std::move(segment));
    } else {
      append_branch(segment, pair.prompt, 0, pair.chosen, kSharedBranch, i, &pair.loss_mask);
      segments.push_back(std::move(segment));
    }
  }
  if (sequences_of(kind) == 2 && !share_prompt) {
    for (int64_t i = 0; i < count; ++i) {
      Segment segment;
      append_branch(segment, pairs[static_cast<size_t>(i)].prompt, 0, pairs[static_cast<size_t>(i)].rejected,
                    kSharedBranch, count + i);
      segments.push_back(std::move(segment));
    }
  }
  return segments;
}

// Segment indices per row: first-fit in decreasing length (ties in sequence order).
std::vector<std::vector<size_t>> place_segments(const std::vector<Segment>& segments, int64_t capacity, bool packing) {
  std::vector<size_t> order(segments.size());
  std::iota(order.begin(), order.end(), 0);
  if (!packing) {
    std::vector<std::vector<size_t>> rows;
    for (size_t s : order) rows.push_back({s});
    return rows;
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return segments[a].tokens.size() > segments[b].tokens.size(); });
  std::vector<std::vector<size_t>> rows;
  std::vector<int64_t> filled;
  for (size_t s : order) {
    const auto length = static_cast<int64_t>(segments[s].tokens.size());
    size_t row = 0;
    while (row < rows.size() && filled[row] + length > capacity) ++row;
    if (row == rows.size()) {
      rows.emplace_back();
      filled.push_back(0);
    }
    rows[row].push_back(s);
    filled[row] += length;
  }
  return rows;
}

}  // namespace

MicroBatch collate_laid_out(const std::vector<Pair>& pairs, PairKind kind, const CollateOptions& options) {
  const bool share_prompt = options.share_prompt && sequences_of(kind) == 2;
  const std::vector<Segment> segments = make_segments(pairs, kind, share_prompt);
  int64_t longest_segment = 1;
  for (const Segment& segment : segments) longest_segment = std::max<int64_t>(longest_segment, segment.tokens.size());
  const int64_t capacity = std::max(options.max_tokens > 0 ? options.max_tokens : options.cutoff_len, longest_segment);
  const std::vector<std::vector<size_t>> rows = place_segments(segments, capacity, options.packing);

  int64_t width = 1;
  for (const auto& row : rows) {
    int64_t filled = 0;
    for (size_t s : row) filled += static_cast<int64_t>(segments[s].tokens.size());
    width = std::max(width, filled);
  }
  const auto row_count = static_cast<int64_t>(rows.size());
  const auto long_options = at::TensorOptions(at::kLong);
  MicroBatch batch;
  batch.input_ids = at::full({row_count, width}, options.pad_id, long_options);
  batch.targets = at::full({row_count, width}, kIgnoreTarget, long_options);
  batch.layout = padding_row_layout(row_count, width);
  RowLayout& layout = batch.layout;
  const auto sequence_count = static_cast<int64_t>(pairs.size()) * sequences_of(kind);
  layout.sequences = sequence_count;
  batch.target_counts = at::zeros({sequence_count}, long_options);
  batch.token_weights = at::zeros({row_count, width}, at::kFloat);

  auto ids = batch.input_ids.accessor<int64_t, 2>();
  auto targets = batch.targets.accessor<int64_t, 2>();
  auto positions = layout.position_ids.accessor<int64_t, 2>();
  auto segment_ids = layout.segment_ids.accessor<int64_t, 2>();
  auto branches = layout.branch_ids.accessor<int64_t, 2>();
  auto sequences = layout.sequence_ids.accessor<int64_t, 2>();
  auto counts = batch.target_counts.accessor<int64_t, 1>();
  auto weights = batch.token_weights.accessor<float, 2>();
  for (int64_t r = 0; r < row_count; ++r) {
    int64_t t = 0;
    for (size_t s : rows[static_cast<size_t>(r)]) {
      const bool partner = schema_of(kind).second == SecondSequence::partner && s >= pairs.size();
      for (const Token& token : segments[s].tokens) {
        ids[r][t] = token.id;
        targets[r][t] = token.target;
        positions[r][t] = token.position;
        segment_ids[r][t] = static_cast<int64_t>(s);
        branches[r][t] = token.branch;
        sequences[r][t] = token.sequence;
        weights[r][t] = partner ? 0.0F : share_prompt && token.branch == kSharedBranch ? 2.0F : 1.0F;
        if (token.sequence >= 0) counts[token.sequence] += 1;
        ++t;
      }
      batch.computed_tokens += static_cast<int64_t>(segments[s].tokens.size());
      for (int64_t length : segments[s].causal_lengths) batch.segment_lengths.push_back(length);
    }
  }
  batch.pairs = static_cast<int64_t>(pairs.size());
  batch.target_tokens = batch.target_counts.sum().item<int64_t>();
  for (const Pair& pair : pairs) {
    batch.real_tokens += static_cast<int64_t>(pair.prompt.size() + pair.chosen.size());
    if (sequences_of(kind) == 2) batch.real_tokens += static_cast<int64_t>(pair.prompt.size() + pair.rejected.size());
  }
  batch.padded_tokens = row_count * width;
  batch.ref_logps = sequence_ref_logps(pairs, kind);
  return batch;
}

}  // namespace st

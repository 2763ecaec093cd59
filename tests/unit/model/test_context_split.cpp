// Context parallelism's split (context_split.h) without collectives: the chunks each rank holds,
// and, over all ranks of a group together, exactly the attention of the whole rows (every
// query but padding sees the keys the masked oracle lets it see, no more) and exactly their
// targets, in
// every row layout, with and without a sliding window, for C = 1..4.
#include "model/context_split.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <stdexcept>
#include <tuple>

#include "attention_layouts.h"
#include "hf/presets.h"

namespace st {
namespace {

using testing::attention_layout_cases;
using testing::layout_case_batch;
using testing::uneven_pairs;

// A group's size and rank only: the split itself calls no collective.
class GroupShape : public ContextExchange {
 public:
  GroupShape(int size, int rank) : size_(size), rank_(rank) {}
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  void all_gather(const at::Tensor&, const at::Tensor&) override { throw std::logic_error("no collective here"); }
  void reduce_scatter_sum(const at::Tensor&, const at::Tensor&) override { throw std::logic_error("no collective"); }
  void all_reduce_sum(const at::Tensor&) override { throw std::logic_error("no collective here"); }

 private:
  int size_, rank_;
};

std::vector<int64_t> host_vector(const at::Tensor& t) {
  const at::Tensor host = t.to(at::kCPU, at::kLong).contiguous();
  return {host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel()};
}

using Visible = std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>>;  // (row, query, row, key)
using Targets = std::set<std::tuple<int64_t, int64_t, int64_t>>;           // (sequence, position, id)

TEST(ContextSplit, RanksHoldChunksKAndTheirMirror) {
  EXPECT_EQ(context_row_length(10, 2), 12);
  EXPECT_EQ(context_row_length(12, 2), 12);
  EXPECT_EQ(context_row_length(1, 3), 6);
  EXPECT_EQ(context_positions(12, 2, 0), (std::vector<int64_t>{0, 1, 2, 9, 10, 11}));
  EXPECT_EQ(context_positions(12, 2, 1), (std::vector<int64_t>{3, 4, 5, 6, 7, 8}));
  for (int64_t parts = 1; parts <= 4; ++parts) {
    const int64_t length = context_row_length(37, parts);
    std::vector<int> held(static_cast<size_t>(length), 0);
    for (int64_t rank = 0; rank < parts; ++rank) {
      const std::vector<int64_t> mine = context_positions(length, parts, rank);
      EXPECT_EQ(static_cast<int64_t>(mine.size()), length / parts);
      for (int64_t t : mine) ++held[static_cast<size_t>(t)];
    }
    for (int count : held) EXPECT_EQ(count, 1) << "C = " << parts;
  }
}

// Whether a query's attention matters: not a padding segment's (whose outputs nothing reads,
// and whose positions the mask and the spans window differently).
bool attends(const MicroBatch& micro, int64_t row, int64_t position) {
  return !micro.layout.defined() || micro.layout.segment_ids[row][position].item<int64_t>() != kPaddingSegment;
}

// The whole rows' visibility from the masked oracle (plain rows without a window: causal).
Visible oracle_visible(const MicroBatch& micro, int64_t window) {
  const ModelConfig config = preset_config("debug");
  const TokenBatch batch = make_token_batch(micro.input_ids, micro.targets, rope_inverse_frequencies(config), at::kFloat,
                                            64, micro.layout, window, AttentionPath::masked);
  const int64_t rows = micro.input_ids.size(0), length = micro.input_ids.size(1);
  at::Tensor mask = batch.positions.attention_mask;
  if (!mask.defined()) mask = at::ones({length, length}, at::kBool).tril();
  mask = mask.expand({rows, 1, length, length}).to(at::kCPU).contiguous();
  const auto seen = mask.accessor<bool, 4>();
  Visible visible;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t q = 0; q < length; ++q) {
      if (!attends(micro, r, q)) continue;
      for (int64_t k = 0; k < length; ++k) {
        if (seen[r][0][q][k]) visible.insert({r, q, r, k});
      }
    }
  }
  return visible;
}

TEST(ContextSplit, TheGroupAttendsAndScoresAsTheWholeRows) {
  const ModelConfig config = preset_config("debug");
  const at::Tensor inverse = rope_inverse_frequencies(config);
  const std::vector<Pair> pairs = uneven_pairs(7, 5);
  for (const auto& c : attention_layout_cases()) {
    const MicroBatch micro = layout_case_batch(pairs, c);
    const int64_t rows = micro.input_ids.size(0), length = micro.input_ids.size(1);
    const Visible expected = oracle_visible(micro, c.window);
    const TokenBatch whole = make_token_batch(micro.input_ids, micro.targets, inverse, at::kFloat, 64, micro.layout);
    Targets expected_targets;
    const std::vector<int64_t> slots = host_vector(whole.target_slots), ids = host_vector(whole.target_ids);
    for (size_t i = 0; i < slots.size(); ++i) expected_targets.insert({slots[i] / length, slots[i] % length, ids[i]});

    for (int parts = 1; parts <= 4; ++parts) {
      const std::string where = std::string(c.name) + ", C = " + std::to_string(parts);
      const int64_t padded = context_row_length(length, parts), local_length = padded / parts;
      Visible visible;
      Targets targets;
      for (int rank = 0; rank < parts; ++rank) {
        const auto group = std::make_shared<GroupShape>(parts, rank);
        const TokenBatch batch = make_context_token_batch(micro.input_ids, micro.targets, inverse, at::kFloat, 64,
                                                          micro.layout, c.window, group);
        ASSERT_EQ(batch.input_ids.sizes(), (at::IntArrayRef{rows, local_length})) << where;
        EXPECT_EQ(batch.slot_length, padded) << where;
        // Where each local query and each gathered key sits in the padded rows.
        const std::vector<int64_t> mine = context_positions(padded, parts, rank);
        auto key_place = [&](int64_t gathered) {
          const int64_t owner = gathered / (rows * local_length), within = gathered % (rows * local_length);
          return std::make_pair(within / local_length,
                                context_positions(padded, parts, owner)[static_cast<size_t>(within % local_length)]);
        };
        const AttentionSpans& spans = batch.positions.spans;
        ASSERT_TRUE(spans.defined() && spans.key_tokens.defined()) << where;
        EXPECT_EQ(spans.window, c.window > 0 && c.window < padded ? c.window : 0) << where;
        const std::vector<int64_t> keys = host_vector(spans.key_tokens);
        for (int64_t p = 0; p < spans.count(); ++p) {
          const auto s = static_cast<size_t>(p);
          const int64_t queries = spans.query_starts[s + 1] - spans.query_starts[s];
          const int64_t count = spans.key_starts[s + 1] - spans.key_starts[s];
          for (int64_t i = 0; i < queries; ++i) {
            const int64_t local = spans.query_starts[s] + i;
            const int64_t row = local / local_length, position = mine[static_cast<size_t>(local % local_length)];
            if (position >= length || !attends(micro, row, position)) continue;  // padding (also 2C chunks')
            const int64_t last = count - queries + i;  // aligned at the end
            for (int64_t j = 0; j <= last; ++j) {
              if (spans.window > 0 && last - j >= spans.window) continue;
              const auto [key_row, key] = key_place(keys[static_cast<size_t>(spans.key_starts[s] + j)]);
              visible.insert({row, position, key_row, key});
            }
          }
        }
        const std::vector<int64_t> local_slots = host_vector(batch.target_slots);
        const std::vector<int64_t> local_ids = host_vector(batch.target_ids);
        const std::vector<int64_t> local_positions = host_vector(batch.target_positions);
        const std::vector<int64_t> input = host_vector(batch.input_ids.reshape({-1}));
        const std::vector<int64_t> whole_input = host_vector(micro.input_ids);
        for (size_t i = 0; i < local_slots.size(); ++i) {
          targets.insert({local_slots[i] / padded, local_slots[i] % padded, local_ids[i]});
          // The token at a target's position is the whole row's token there.
          const int64_t local = local_positions[i];
          const int64_t row = local / local_length, position = mine[static_cast<size_t>(local % local_length)];
          EXPECT_EQ(input[static_cast<size_t>(local)], whole_input[static_cast<size_t>(row * length + position)]);
        }
      }
      Visible missing, extra;
      std::set_difference(expected.begin(), expected.end(), visible.begin(), visible.end(),
                          std::inserter(missing, missing.begin()));
      std::set_difference(visible.begin(), visible.end(), expected.begin(), expected.end(),
                          std::inserter(extra, extra.begin()));
      for (const auto& [r, q, kr, k] : missing) ADD_FAILURE() << where << ": row " << r << " query " << q << " misses key " << k;
      for (const auto& [r, q, kr, k] : extra) ADD_FAILURE() << where << ": row " << r << " query " << q << " sees " << kr << "/" << k;
      if (!missing.empty() || !extra.empty()) break;
      EXPECT_EQ(targets, expected_targets) << where;
    }
  }
}

}  // namespace
}  // namespace st

// Packed and prompt-shared collation (packed_rows.h): the exact layout of a shared segment,
// whole sequences per row within the capacity, positions restarting per sequence, and every
// sequence's targets the same as in its plain row.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <map>

#include "data/collate.h"
#include "data/padded_rows.h"

namespace st {
namespace {

Pair make_pair(int prompt, int chosen, int rejected, int salt = 0) {
  Pair pair;
  for (int i = 0; i < prompt; ++i) pair.prompt.push_back(10 + i + salt);
  for (int i = 0; i < chosen; ++i) pair.chosen.push_back(40 + i + salt);
  for (int i = 0; i < rejected; ++i) pair.rejected.push_back(70 + i + salt);
  return pair;
}

std::vector<int64_t> row_of(const at::Tensor& t, int64_t row) {
  const at::Tensor r = t[row].contiguous();
  return {r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel()};
}

// Per output sequence: its (input id, target) pairs at target positions, in position order.
std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> sequence_targets(const MicroBatch& batch) {
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> out;
  for (int64_t r = 0; r < batch.input_ids.size(0); ++r) {
    for (int64_t t = 0; t < batch.input_ids.size(1); ++t) {
      const int64_t target = batch.targets[r][t].item<int64_t>();
      if (target == kIgnoreTarget) continue;
      const int64_t sequence = batch.layout.defined() ? batch.layout.sequence_ids[r][t].item<int64_t>() : r;
      out[sequence].push_back({batch.input_ids[r][t].item<int64_t>(), target});
    }
  }
  return out;
}

TEST(PackedRows, SharedSegmentHoldsThePromptOnceAndEachBranchSeesOnlyItsOwn) {
  CollateOptions options;
  options.share_prompt = true;
  const MicroBatch batch = collate_pairs({make_pair(3, 2, 1)}, PairKind::dpo, options);
  ASSERT_TRUE(batch.layout.defined());
  ASSERT_EQ(batch.input_ids.sizes(), (at::IntArrayRef{1, 7}));
  const int64_t x = kIgnoreTarget;
  // prompt[:-1] | prompt[-1] chosen | prompt[-1] rejected
  EXPECT_EQ(row_of(batch.input_ids, 0), (std::vector<int64_t>{10, 11, 12, 40, 41, 12, 70}));
  EXPECT_EQ(row_of(batch.targets, 0), (std::vector<int64_t>{x, x, 40, 41, x, 70, x}));
  EXPECT_EQ(row_of(batch.layout.position_ids, 0), (std::vector<int64_t>{0, 1, 2, 3, 4, 2, 3}));
  EXPECT_EQ(row_of(batch.layout.branch_ids, 0),
            (std::vector<int64_t>{kSharedBranch, kSharedBranch, kChosenBranch, kChosenBranch, kChosenBranch,
                                  kRejectedBranch, kRejectedBranch}));
  EXPECT_EQ(row_of(batch.layout.sequence_ids, 0), (std::vector<int64_t>{-1, -1, 0, 0, -1, 1, -1}));
  EXPECT_EQ(batch.layout.sequences, 2);
  EXPECT_TRUE(batch.target_counts.equal(at::tensor({2, 1}, at::kLong)));
  EXPECT_EQ(batch.real_tokens, (3 + 2) + (3 + 1));  // logical: both plain rows
  EXPECT_EQ(batch.computed_tokens, 7);
  // The router loss counts each position for the plain rows' tokens it stands for.
  EXPECT_TRUE(batch.token_weights[0].equal(at::tensor({2.0F, 2.0F, 1.0F, 1.0F, 1.0F, 1.0F, 1.0F})));
  EXPECT_EQ(batch.segment_lengths, (std::vector<int64_t>{5, 2}));
}

TEST(PackedRows, SequencesKeepTheirPlainTargetsCountsAndReferenceOrder) {
  std::vector<Pair> pairs;
  for (int i = 0; i < 7; ++i) {
    pairs.push_back(make_pair(1 + i % 4, 2 + (3 * i) % 5, 1 + (2 * i) % 6, i));
    pairs.back().ref_chosen_logp = -1.0f - i;
    pairs.back().ref_rejected_logp = -10.0f - i;
  }
  for (const PairKind kind : {PairKind::dpo, PairKind::sft}) {
    CollateOptions plain_options;
    const MicroBatch plain = collate_pairs(pairs, kind, plain_options);
    for (const bool share : {false, true}) {
      for (const bool packing : {false, true}) {
        if (!packing && !(share && kind == PairKind::dpo)) continue;
        CollateOptions options;
        options.packing = packing;
        options.share_prompt = share;
        options.cutoff_len = 16;
        const MicroBatch laid = collate_pairs(pairs, kind, options);
        const std::string label = std::string(enum_name(kind)) + (share ? " shared" : "") + (packing ? " packed" : "");
        EXPECT_EQ(sequence_targets(laid), sequence_targets(plain)) << label;
        EXPECT_TRUE(laid.target_counts.equal(plain.target_counts)) << label;
        EXPECT_TRUE(laid.ref_logps.equal(plain.ref_logps)) << label;
        EXPECT_EQ(laid.target_tokens, plain.target_tokens) << label;
        EXPECT_EQ(laid.real_tokens, plain.real_tokens) << label;
        EXPECT_EQ(laid.sequences(), plain.sequences()) << label;
        EXPECT_LT(laid.padded_tokens, plain.padded_tokens) << label;
      }
    }
  }
}

// A masked SFT completion keeps exactly its plain targets when packed.
TEST(PackedRows, SftLossMaskGivesThePlainTargets) {
  std::vector<Pair> pairs = {make_pair(2, 6, 0), make_pair(3, 4, 0, 100)};
  pairs[0].loss_mask = {1, 0, 0, 1, 1, 0};
  CollateOptions packed;
  packed.packing = true;
  packed.cutoff_len = 32;
  const MicroBatch plain_batch = collate_pairs(pairs, PairKind::sft, {});
  const MicroBatch packed_batch = collate_pairs(pairs, PairKind::sft, packed);
  EXPECT_EQ(packed_batch.input_ids.size(0), 1);
  EXPECT_EQ(sequence_targets(packed_batch), sequence_targets(plain_batch));
  EXPECT_EQ(sequence_targets(packed_batch)[0].size(), 3u);
  EXPECT_TRUE(packed_batch.target_counts.equal(plain_batch.target_counts));
}

TEST(PackedRows, RowsHoldWholeSequencesWithinTheCapacityAndPositionsRestart) {
  std::vector<Pair> pairs;
  for (int i = 0; i < 9; ++i) pairs.push_back(make_pair(2 + i % 3, 3 + (5 * i) % 7, 0, i));
  CollateOptions options;
  options.packing = true;
  options.cutoff_len = 16;
  const MicroBatch batch = collate_pairs(pairs, PairKind::sft, options);
  EXPECT_LE(batch.input_ids.size(1), 16);
  EXPECT_LT(batch.input_ids.size(0), 9) << "no two sequences shared a row";
  int64_t segments_seen = 0;
  for (int64_t r = 0; r < batch.input_ids.size(0); ++r) {
    const std::vector<int64_t> segments = row_of(batch.layout.segment_ids, r);
    const std::vector<int64_t> positions = row_of(batch.layout.position_ids, r);
    for (size_t t = 0; t < segments.size(); ++t) {
      if (segments[t] == kPaddingSegment) continue;
      const bool starts = t == 0 || segments[t - 1] != segments[t];
      if (starts) ++segments_seen;
      EXPECT_EQ(positions[t], starts ? 0 : positions[t - 1] + 1) << "row " << r << " token " << t;
    }
  }
  EXPECT_EQ(segments_seen, 9) << "each sequence is one whole run of tokens";
  EXPECT_EQ(batch.computed_tokens, batch.real_tokens);
}

TEST(PackedRows, TokenBudgetCountsThePairsTokensAndSetsTheRowLength) {
  const std::vector<int64_t> lengths = {10, 30, 12, 8, 40};
  CollateOptions options;
  options.packing = true;
  options.max_tokens = 50;
  options.cutoff_len = 64;
  // sft: 10 + 30 fits, + 12 does not; 12 + 8 fits, + 40 does not.
  EXPECT_EQ(plan_micro_batches(lengths, PairKind::sft, options),
            (std::vector<std::vector<size_t>>{{0, 1}, {2, 3}, {4}}));
  std::vector<Pair> pairs = {make_pair(4, 20, 0), make_pair(4, 20, 0)};
  const MicroBatch batch = collate_pairs(pairs, PairKind::sft, options);
  EXPECT_EQ(batch.input_ids.sizes(), (at::IntArrayRef{1, 48})) << "both sequences in one row of <= 50";
}

// The router's load-balancing loss counts the tokens of the rows TRL pads (the unpacked pairs):
// padding never, a shared prompt's twice, KTO's mismatched partners (run without gradient there)
// never. Summed, the weights are the logical tokens whatever the layout.
TEST(PackedRows, TokenWeightsCountTheUnpackedRowsTokens) {
  const std::vector<Pair> pairs = {make_pair(3, 2, 4, 0), make_pair(5, 1, 2, 1), make_pair(1, 3, 3, 2)};
  for (const bool packing : {false, true}) {
    for (const bool share_prompt : {false, true}) {
      CollateOptions options;
      options.packing = packing;
      options.share_prompt = share_prompt;
      options.max_tokens = packing ? 20 : 0;
      for (const PairKind kind : {PairKind::dpo, PairKind::sft}) {
        const MicroBatch batch = collate_pairs(pairs, kind, options);
        ASSERT_TRUE(batch.token_weights.defined());
        EXPECT_EQ(batch.token_weights.sizes(), batch.input_ids.sizes());
        EXPECT_EQ(batch.token_weights.sum().item<double>(), static_cast<double>(batch.real_tokens))
            << "packing " << packing << ", shared prompt " << share_prompt << ", kind " << static_cast<int>(kind);
        // Padding (a plain row's end, a packed row's unfilled tail) weighs nothing.
        if (batch.layout.defined()) {
          const at::Tensor padding = batch.layout.segment_ids.eq(kPaddingSegment);
          EXPECT_EQ(batch.token_weights.masked_select(padding).abs().sum().item<double>(), 0.0);
        } else {
          for (int64_t r = 0; r < batch.input_ids.size(0); ++r) {
            const int64_t length = batch.segment_lengths[static_cast<size_t>(r)];
            EXPECT_TRUE(batch.token_weights[r].narrow(0, 0, length).eq(1).all().item<bool>()) << r;
            EXPECT_EQ(batch.token_weights[r].sum().item<double>(), static_cast<double>(length)) << r;
          }
        }
      }
    }
  }
  std::vector<Pair> unpaired = pairs;
  for (Pair& pair : unpaired) pair.label = true;  // kto: rejected holds the mismatched partner's completion
  for (const bool packing : {false, true}) {
    CollateOptions options;
    options.packing = packing;
    const MicroBatch batch = collate_pairs(unpaired, PairKind::kto, options);
    EXPECT_EQ(batch.token_weights.sum().item<double>(), (3 + 2) + (5 + 1) + (1 + 3)) << "packing " << packing;
  }
}

}  // namespace
}  // namespace st

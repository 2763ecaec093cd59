// Truncation, collation into micro-batches, micro-batch planning and prefetching.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>

#include "data/collate.h"
#include "data/prefetcher.h"
#include "model/token_logp.h"

namespace st {
namespace {

Pair make_pair(int prompt, int chosen, int rejected) {
  Pair pair;
  for (int i = 0; i < prompt; ++i) pair.prompt.push_back(10 + i);
  for (int i = 0; i < chosen; ++i) pair.chosen.push_back(40 + i);
  for (int i = 0; i < rejected; ++i) pair.rejected.push_back(70 + i);
  return pair;
}

// LlamaFactory's infer_seqlen shares (its processor_utils.py), the prompt keeping its end.
TEST(Truncation, LlamaFactorySharesThePromptKeepingItsEnd) {
  Pair fits = make_pair(3, 4, 2);
  EXPECT_EQ(fit_to_cutoff(fits, 7, TruncationPolicy::truncate), FitResult::kept);
  // A short response (3 x 2 < 8) stays whole; the prompt gets the rest.
  Pair short_response = make_pair(10, 3, 2);
  EXPECT_EQ(fit_to_cutoff(short_response, 8, TruncationPolicy::truncate), FitResult::truncated);
  EXPECT_EQ(short_response.prompt, (std::vector<int32_t>{15, 16, 17, 18, 19}));  // the end is kept
  EXPECT_EQ(short_response.chosen.size(), 3u);
  // A short prompt (3 x 2 < 8) stays whole; the responses get the rest.
  Pair short_prompt = make_pair(3, 20, 1);
  fit_to_cutoff(short_prompt, 8, TruncationPolicy::truncate);
  EXPECT_EQ(short_prompt.prompt.size(), 3u);
  EXPECT_EQ(short_prompt.chosen, (std::vector<int32_t>{40, 41, 42, 43, 44}));
  EXPECT_EQ(short_prompt.rejected.size(), 1u);
  // Both long: int(8 x 20 / 25) = 6 response tokens, 2 prompt tokens.
  Pair both_long = make_pair(5, 20, 3);
  fit_to_cutoff(both_long, 8, TruncationPolicy::truncate);
  EXPECT_EQ(both_long.prompt, (std::vector<int32_t>{13, 14}));
  EXPECT_EQ(both_long.chosen, (std::vector<int32_t>{40, 41, 42, 43, 44, 45}));
  EXPECT_EQ(both_long.rejected.size(), 3u);
  // int(8 x 4 / 14) = 2: LlamaFactory cuts the response too, though the prompt alone could go.
  Pair long_prompt = make_pair(10, 4, 2);
  fit_to_cutoff(long_prompt, 8, TruncationPolicy::truncate);
  EXPECT_EQ(long_prompt.prompt.size(), 6u);
  EXPECT_EQ(long_prompt.chosen.size(), 2u);
  Pair dropped = make_pair(10, 4, 2);
  EXPECT_EQ(fit_to_cutoff(dropped, 8, TruncationPolicy::drop), FitResult::dropped);
}

TEST(Collate, DpoRowsAreChosenThenRejectedWithResponseTargetsOnly) {
  std::vector<Pair> pairs = {make_pair(2, 3, 1), make_pair(1, 1, 4)};
  pairs[0].ref_chosen_logp = -1.0f;
  pairs[0].ref_rejected_logp = -2.0f;
  pairs[1].ref_chosen_logp = -3.0f;
  pairs[1].ref_rejected_logp = -4.0f;
  CollateOptions options;
  options.pad_id = 0;
  const MicroBatch batch = collate_pairs(pairs, PairKind::dpo, options);
  ASSERT_EQ(batch.input_ids.sizes(), (at::IntArrayRef{4, 5}));
  const auto expect_row = [&](int64_t row, std::vector<int64_t> ids, std::vector<int64_t> targets) {
    for (size_t t = 0; t < ids.size(); ++t) EXPECT_EQ(batch.input_ids[row][t].item<int64_t>(), ids[t]) << row;
    for (size_t t = 0; t < targets.size(); ++t) EXPECT_EQ(batch.targets[row][t].item<int64_t>(), targets[t]) << row << "," << t;
  };
  const int64_t x = kIgnoreTarget;
  expect_row(0, {10, 11, 40, 41, 42}, {x, 40, 41, 42, x});  // pair 0, chosen
  expect_row(1, {10, 40, 0, 0, 0}, {40, x, x, x, x});        // pair 1, chosen, padded
  expect_row(2, {10, 11, 70, 0, 0}, {x, 70, x, x, x});      // pair 0, rejected
  expect_row(3, {10, 70, 71, 72, 73}, {70, 71, 72, 73, x});  // pair 1, rejected
  EXPECT_EQ(batch.target_tokens, 3 + 1 + 1 + 4);
  EXPECT_EQ(batch.real_tokens, 5 + 2 + 3 + 5);
  EXPECT_EQ(batch.padded_tokens, 20);
  EXPECT_TRUE(batch.ref_logps.equal(at::tensor({-1.0f, -3.0f, -2.0f, -4.0f})));
}

TEST(Collate, SftHasOneRowPerPair) {
  Pair pair = make_pair(2, 2, 0);
  const MicroBatch batch = collate_pairs({pair}, PairKind::sft, {});
  EXPECT_EQ(batch.input_ids.size(0), 1);
  EXPECT_EQ(batch.target_tokens, 2);
  EXPECT_FALSE(batch.ref_logps.defined());
}

// Multi-turn SFT: only completion tokens whose mask is 1 are targets; truncation cuts the mask
// with the completion.
TEST(Collate, SftLossMaskLeavesTheUntrainedTurnsWithoutTargets) {
  Pair pair = make_pair(2, 6, 0);
  pair.loss_mask = {1, 1, 0, 0, 1, 1};
  const MicroBatch batch = collate_pairs({pair}, PairKind::sft, {});
  const int64_t x = kIgnoreTarget;
  const std::vector<int64_t> expected = {x, 40, 41, x, x, 44, 45, x};
  for (size_t t = 0; t < expected.size(); ++t) EXPECT_EQ(batch.targets[0][t].item<int64_t>(), expected[t]) << t;
  EXPECT_EQ(batch.target_tokens, 4);
  EXPECT_EQ(batch.target_counts[0].item<int64_t>(), 4);

  CollateOptions short_rows;
  short_rows.cutoff_len = 6;  // the short prompt (2 x 2 < 6) whole + the first 4 completion tokens
  const MicroBatch cut = collate_pairs({pair}, PairKind::sft, short_rows);
  EXPECT_EQ(cut.input_ids.size(1), 6);
  EXPECT_EQ(cut.target_tokens, 2);
  Pair truncated = pair;
  fit_to_cutoff(truncated, 6, TruncationPolicy::truncate);
  EXPECT_EQ(truncated.loss_mask, (std::vector<uint8_t>{1, 1, 0, 0}));
}

TEST(PlanMicroBatches, PairCountsTokenBudgetsAndLengthGrouping) {
  const std::vector<int64_t> lengths = {5, 50, 6, 48, 7, 52};
  CollateOptions options;
  options.micro_batch = 2;
  auto groups = plan_micro_batches(lengths, PairKind::sft, options);
  EXPECT_EQ(groups, (std::vector<std::vector<size_t>>{{0, 1}, {2, 3}, {4, 5}}));
  options.group_by_length = true;
  groups = plan_micro_batches(lengths, PairKind::sft, options);
  EXPECT_EQ(groups, (std::vector<std::vector<size_t>>{{0, 2}, {4, 3}, {1, 5}}));
  options.group_by_length = false;
  options.max_tokens = 104;  // DPO: 2 rows per pair
  groups = plan_micro_batches(lengths, PairKind::dpo, options);
  for (const auto& group : groups) {
    int64_t longest = 0;
    for (size_t i : group) longest = std::max(longest, lengths[i]);
    EXPECT_LE(longest * 2 * static_cast<int64_t>(group.size()), 104);
  }
  size_t total = 0;
  for (const auto& group : groups) total += group.size();
  EXPECT_EQ(total, lengths.size());
}

TEST(Prefetcher, DeliversInOrderPropagatesErrorsAndStopsCleanly) {
  std::atomic<int> produced{0};
  {
    Prefetcher<int> prefetcher([&] { return produced++; }, 3);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(prefetcher.next(), i);
  }  // destruction while the producer waits on a full queue must not hang
  EXPECT_LE(produced.load(), 14);
  int calls = 0;
  Prefetcher<int> failing([&]() -> int {
    if (++calls == 3) throw std::runtime_error("shard 7 unreadable");
    return calls;
  }, 2);
  EXPECT_EQ(failing.next(), 1);
  EXPECT_EQ(failing.next(), 2);
  EXPECT_THROW(
      {
        try {
          failing.next();
        } catch (const std::runtime_error& error) {
          EXPECT_STREQ(error.what(), "shard 7 unreadable");
          throw;
        }
      },
      std::runtime_error);
}

}  // namespace
}  // namespace st

// data.micro_batch_tokens = -1 (auto): the token budget sized to the memory left once the model
// states are in place, as recompute = auto sizes its kept activations; and varlen attention
// takes no [T, T] mask in the memory plan.
#include <gtest/gtest.h>

#include "hf/presets.h"
#include "train/recompute_choice.h"
#include "train/train_plan.h"

namespace st {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

struct Budget {
  ModelConfig model = preset_config("llama-3.2-1b");
  EstimateInputs in;
  DataOptions data;
  Budget() {
    in.ranks_per_node = 1;
    data.packing = true;
    data.cutoff_len = 1024;
    data.micro_batch_tokens = kAutoMicroBatchTokens;
  }
  int64_t fit(int64_t available, bool share_prompt = true) const {
    return fit_micro_batch_tokens(model, in, Stage::dpo, data, share_prompt, AttentionPath::varlen, available);
  }
  // The full-recompute working set of a budget, as the fit counts it.
  int64_t working(int64_t tokens) const {
    DataOptions sized = data;
    sized.micro_batch_tokens = tokens;
    EstimateInputs with = in;
    with.recompute = Recompute::full;
    set_micro_batch(with, largest_micro_batch(Stage::dpo, 1, sized, true, AttentionPath::varlen));
    const MemoryEstimate e = estimate_memory(model, with);
    return e.gathered + e.activations + kRecomputeMarginBytes;
  }
};

TEST(TokenBudget, AmpleMemoryTakesTheCeiling) { EXPECT_EQ(Budget().fit(60 * kGiB), kTokenBudgetCeiling); }

TEST(TokenBudget, LessMemoryHalvesTheBudgetUntilTheWorkingSetFitsThreeQuarters) {
  const Budget budget;
  for (const int64_t tokens : {4096, 8192}) {
    const int64_t just_enough = (4 * budget.working(tokens) + 2) / 3;
    EXPECT_EQ(budget.fit(just_enough), tokens);
    EXPECT_EQ(budget.fit(just_enough - kGiB / 8), tokens / 2);  // a little less: the next halving
    EXPECT_GT(4 * budget.working(2 * tokens), 3 * just_enough);
  }
}

TEST(TokenBudget, NeverBelowTheLongestSegment) {
  const Budget budget;
  EXPECT_EQ(budget.fit(1), 2 * budget.data.cutoff_len);         // a shared segment: prompt + two responses
  EXPECT_EQ(budget.fit(1, false), budget.data.cutoff_len);
}

TEST(TokenBudget, CpuTakesItsFixedBudgetAndFixedValuesStay) {
  Budget budget;
  EXPECT_EQ(budget.fit(-1), kCpuTokenBudget);
  budget.data.micro_batch_tokens = 3000;
  EXPECT_EQ(budget.fit(60 * kGiB), 3000);
  budget.data.micro_batch_tokens = 0;
  EXPECT_EQ(budget.fit(60 * kGiB), 0);
}

TEST(TokenBudget, OnlyTheMaskedPathPlansAMask) {
  DataOptions data;
  data.packing = true;
  EXPECT_FALSE(largest_micro_batch(Stage::dpo, 4, data, true, AttentionPath::varlen).masked);
  EXPECT_TRUE(largest_micro_batch(Stage::dpo, 4, data, true, AttentionPath::masked).masked);
}

}  // namespace
}  // namespace st

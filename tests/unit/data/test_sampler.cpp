// The data-parallel sampler: exact epoch coverage on any rank count, resume from any cursor,
// and the same global sequence after a change of rank count.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "data/sampler.h"

namespace st {
namespace {

// Every rank's samples for `steps` steps from `cursor`, in global order (ranks concatenated).
std::vector<uint64_t> run(const GlobalSampler& sampler, SamplerCursor& cursor, int ranks, int steps) {
  std::vector<uint64_t> seen;
  for (int s = 0; s < steps; ++s) {
    const GlobalBatch batch = sampler.batch_at(cursor);
    for (int r = 0; r < ranks; ++r) {
      const auto mine = rank_slice(batch.indices, r, ranks);
      seen.insert(seen.end(), mine.begin(), mine.end());
    }
    cursor = batch.next;
  }
  return seen;
}

TEST(Sampler, OneEpochCoversTheDatasetExactlyOnAnyRankCount) {
  for (uint64_t size : {1u, 7u, 97u, 100u}) {
    for (int ranks = 1; ranks <= 4; ++ranks) {
      const GlobalSampler sampler(size, 8, 42);
      SamplerCursor cursor;
      const auto seen = run(sampler, cursor, ranks, static_cast<int>(sampler.batches_per_epoch()));
      EXPECT_EQ(seen.size(), size);
      EXPECT_EQ(std::set<uint64_t>(seen.begin(), seen.end()).size(), size) << "duplicates";
      EXPECT_EQ(*std::max_element(seen.begin(), seen.end()), size - 1);
      EXPECT_EQ(cursor, (SamplerCursor{1, 0})) << "the epoch ends exactly at its last batch";
    }
  }
}

TEST(Sampler, EpochsArePermutedDifferentlyAndDeterministically) {
  const GlobalSampler a(1000, 10, 5), b(1000, 10, 5), c(1000, 10, 6);
  const std::vector<uint64_t> epoch0 = a.epoch_order(0);  // copies: the order is cached per epoch
  EXPECT_EQ(epoch0, b.epoch_order(0));
  EXPECT_NE(epoch0, a.epoch_order(1));
  EXPECT_NE(epoch0, c.epoch_order(0));
  const GlobalSampler in_order(10, 3, 5, /*shuffle=*/false);
  EXPECT_EQ(in_order.epoch_order(3), (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(Sampler, ResumeFromAnyCursorContinuesExactly) {
  const GlobalSampler sampler(53, 6, 1);
  SamplerCursor cursor;
  const auto straight = run(sampler, cursor, 2, 25);  // crosses two epoch ends
  for (int split = 0; split <= 25; ++split) {
    SamplerCursor first_half;
    auto resumed = run(sampler, first_half, 2, split);
    SamplerCursor saved = first_half;  // what a checkpoint stores
    const GlobalSampler fresh(53, 6, 1);  // a new process
    const auto rest = run(fresh, saved, 2, 25 - split);
    resumed.insert(resumed.end(), rest.begin(), rest.end());
    EXPECT_EQ(resumed, straight) << "split at step " << split;
  }
}

TEST(Sampler, ChangingTheRankCountKeepsTheGlobalSequence) {
  const GlobalSampler sampler(200, 12, 9);
  SamplerCursor cursor;
  const auto reference = run(sampler, cursor, 1, 30);
  SamplerCursor mixed;
  auto seen = run(sampler, mixed, 4, 10);
  const auto middle = run(sampler, mixed, 3, 10);
  const auto last = run(sampler, mixed, 2, 10);
  seen.insert(seen.end(), middle.begin(), middle.end());
  seen.insert(seen.end(), last.begin(), last.end());
  EXPECT_EQ(seen, reference);
}

TEST(Sampler, RankSlicesDifferByAtMostOne) {
  const std::vector<uint64_t> batch = {1, 2, 3, 4, 5, 6, 7};
  size_t total = 0;
  for (int r = 0; r < 3; ++r) {
    const auto mine = rank_slice(batch, r, 3);
    EXPECT_GE(mine.size(), 2u);
    EXPECT_LE(mine.size(), 3u);
    total += mine.size();
  }
  EXPECT_EQ(total, 7u);
}

}  // namespace
}  // namespace st

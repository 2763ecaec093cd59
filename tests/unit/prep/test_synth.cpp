// Offline dataset making: the synthetic pairs and the reference columns' shard names.
#include <gtest/gtest.h>

#include "prep/reference_columns.h"
#include "prep/synth.h"

namespace st {
namespace {

TEST(Synth, PairsDependOnlyOnSeedAndIndex) {
  SynthOptions options;
  options.seed = 4;
  const PairTable whole = synthesize_pairs(options, 0, 30);
  const PairTable tail = synthesize_pairs(options, 20, 10);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(whole.at(20 + i).rejected, tail.at(i).rejected);
  for (size_t i = 0; i < whole.size(); ++i) {
    const Pair pair = whole.at(i);
    EXPECT_EQ(pair.prompt.front(), kSynthBos);
    EXPECT_EQ(pair.chosen.back(), kSynthEos);
    EXPECT_EQ(std::vector<int32_t>(pair.prompt.begin() + 1, pair.prompt.end()),
              std::vector<int32_t>(pair.chosen.begin(), pair.chosen.end() - 1));  // copy task
    EXPECT_NE(pair.chosen, pair.rejected);
    for (int32_t token : pair.rejected) EXPECT_LT(token, options.vocab_size);
  }
  options.task = SynthTask::reverse;
  const Pair reversed = synthesize_pairs(options, 0, 1).at(0);
  EXPECT_EQ(reversed.chosen[0], reversed.prompt[reversed.prompt.size() - 1]);
}

TEST(ReferenceColumns, ShardNamesToggle) {
  EXPECT_EQ(reference_shard_name("part-00000.h5"), "part-00000.ref.h5");
  EXPECT_EQ(reference_shard_name("part-00000.ref.h5"), "part-00000.h5");
  EXPECT_EQ(reference_shard_name(reference_shard_name("x.h5")), "x.h5");
}

}  // namespace
}  // namespace st

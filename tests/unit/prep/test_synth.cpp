// Offline dataset making: the synthetic pairs and the reference columns' shard names.
#include <gtest/gtest.h>

#include <algorithm>

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

// The realistic length profiles: medians near their documented values, lengths in range,
// chosen and rejected drawn separately, and the response still the task's output.
TEST(Synth, LengthProfilesHaveTheirMediansAndRanges) {
  for (const SynthLengths lengths : {SynthLengths::ultrafeedback, SynthLengths::long_prompt}) {
    SynthOptions options;
    options.lengths = lengths;
    options.vocab_size = 4096;
    const LengthProfile profile = length_profile(lengths);
    const PairTable table = synthesize_pairs(options, 0, 801);
    std::vector<int64_t> prompts, responses;
    size_t differ = 0;
    for (size_t i = 0; i < table.size(); ++i) {
      const Pair pair = table.at(i);
      prompts.push_back(static_cast<int64_t>(pair.prompt.size()));
      responses.push_back(static_cast<int64_t>(pair.chosen.size()));
      EXPECT_GE(prompts.back(), profile.prompt.least);
      EXPECT_LE(prompts.back(), profile.prompt.most);
      EXPECT_GE(responses.back(), profile.response.least);
      EXPECT_LE(responses.back(), profile.response.most);
      EXPECT_EQ(pair.chosen.back(), kSynthEos);
      EXPECT_EQ(pair.chosen[0], pair.prompt[1]) << "copy task: the response starts with the prompt's content";
      differ += pair.chosen.size() != pair.rejected.size();
    }
    std::nth_element(prompts.begin(), prompts.begin() + 400, prompts.end());
    std::nth_element(responses.begin(), responses.begin() + 400, responses.end());
    EXPECT_NEAR(static_cast<double>(prompts[400]), profile.prompt.median, 0.1 * profile.prompt.median)
        << enum_name(lengths);
    EXPECT_NEAR(static_cast<double>(responses[400]), profile.response.median, 0.1 * profile.response.median)
        << enum_name(lengths);
    EXPECT_GT(differ, table.size() / 2) << "chosen and rejected lengths are drawn separately";
  }
}

TEST(ReferenceColumns, ShardNamesToggle) {
  EXPECT_EQ(reference_shard_name("part-00000.h5"), "part-00000.ref.h5");
  EXPECT_EQ(reference_shard_name("part-00000.ref.h5"), "part-00000.h5");
  EXPECT_EQ(reference_shard_name(reference_shard_name("x.h5")), "x.h5");
}

}  // namespace
}  // namespace st

// Group-relative advantages (train/group_advantages.h) on rewards small enough to compute by
// hand: each scaling, the two aggregations of several reward functions, and TRL's handling of
// rewards a function could not give (NaN) and of completions no function scored; RLOO's
// leave-one-out baselines with its KL penalty, clipping and normalisation.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "train/group_advantages.h"

namespace st {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
// Closed forms in float64 against the same formulas summed in another order: a few ulps.
constexpr double kTight = 1e-12;

RewardTable one_function(std::vector<double> values) { return {std::move(values), 1}; }

AdvantageOptions options(int64_t group, RewardScaling scaling = RewardScaling::group, std::vector<double> weights = {1.0}) {
  AdvantageOptions o;
  o.group_size = group;
  o.scaling = scaling;
  o.weights = std::move(weights);
  return o;
}

TEST(GroupAdvantages, CentredOnTheGroupMeanOverItsSampleStd) {
  // Group 1: {1, 0, 0, 1}: mean 0.5, n-1 std sqrt(1/3). Group 2: {2, 2, 2, 2}: std 0.
  const GroupAdvantages a = group_advantages(one_function({1, 0, 0, 1, 2, 2, 2, 2}), options(4));
  const double scale = std::sqrt(1.0 / 3.0) + 1e-4;
  EXPECT_NEAR(a.advantages[0], 0.5 / scale, kTight);
  EXPECT_NEAR(a.advantages[1], -0.5 / scale, kTight);
  for (int i = 4; i < 8; ++i) EXPECT_EQ(a.advantages[i], 0.0) << "equal rewards: no signal";
  EXPECT_DOUBLE_EQ(a.zero_std_fraction, 0.5);
  EXPECT_NEAR(a.reward_mean, 1.25, kTight);
  EXPECT_NEAR(a.reward_std, std::sqrt((2 * 0.0625 + 2 * 1.5625 + 4 * 0.5625) / 7.0), kTight);
}

TEST(GroupAdvantages, BatchScalingKeepsGroupMeansButOneScale) {
  const std::vector<double> r{1, 0, 0, 1, 2, 2, 2, 5};
  const GroupAdvantages a = group_advantages(one_function(r), options(4, RewardScaling::batch));
  const double scale = nan_std(r) + 1e-4;
  EXPECT_NEAR(a.advantages[0], 0.5 / scale, kTight);
  EXPECT_NEAR(a.advantages[7], (5 - 2.75) / scale, kTight);
  EXPECT_DOUBLE_EQ(a.zero_std_fraction, 0.0) << "the batch's scale is not 0";
}

TEST(GroupAdvantages, NoScalingOnlyCentres) {
  const GroupAdvantages a = group_advantages(one_function({3, 1, 4, 4}), options(2, RewardScaling::none));
  EXPECT_NEAR(a.advantages[0], 1.0, kTight);
  EXPECT_NEAR(a.advantages[1], -1.0, kTight);
  EXPECT_EQ(a.advantages[2], 0.0);
  EXPECT_DOUBLE_EQ(a.zero_std_fraction, 0.5) << "the groups' scales still tell which had no spread";
}

TEST(GroupAdvantages, MissingRewardsStayOutOfTheGroupStatistics) {
  // Group 1: one reward missing: mean and std over {1, 0, 5}. Group 2: one valid value: 0.
  const GroupAdvantages a = group_advantages(one_function({1, kNan, 0, 5, kNan, 7, kNan, kNan}), options(4));
  const double mean = 2.0, scale = std::sqrt((1.0 + 4.0 + 9.0) / 2.0) + 1e-4;
  EXPECT_NEAR(a.advantages[0], (1 - mean) / scale, kTight);
  EXPECT_EQ(a.advantages[1], 0.0) << "an unscorable completion moves nothing";
  EXPECT_NEAR(a.advantages[3], (5 - mean) / scale, kTight);
  for (int i = 4; i < 8; ++i) EXPECT_EQ(a.advantages[i], 0.0) << "one valid value: no baseline";
  EXPECT_NEAR(a.reward_mean, 13.0 / 4.0, kTight) << "the mean over the scored completions only";
  EXPECT_DOUBLE_EQ(a.zero_std_fraction, 0.0) << "an undefined std is not a zero one";
}

TEST(GroupAdvantages, WeightedSumThenNormalise) {
  // Two functions, weights 1 and 0.5; the second has no reward for completion 1: nansum.
  const RewardTable r{{1, 2, 0, kNan, 3, 0, 1, 1}, 2};
  const GroupAdvantages a = group_advantages(r, options(4, RewardScaling::group, {1.0, 0.5}));
  const std::vector<double> sums{2.0, 0.0, 3.0, 1.5};
  const double mean = 6.5 / 4.0, scale = nan_std(sums) + 1e-4;
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(a.advantages[i], (sums[i] - mean) / scale, kTight);
  EXPECT_NEAR(a.function_means[1], 3.0 / 3.0, kTight) << "each function's mean over its own valid values";
  EXPECT_NEAR(a.reward_mean, mean, kTight);
}

TEST(GroupAdvantages, NormaliseEachFunctionThenSumOverTheBatch) {
  // normalize_then_sum: each function's rewards normalised in their group, weighed and summed,
  // then the sums normalised over the batch (scale_rewards does not apply).
  const RewardTable r{{1, 10, 0, 20, 1, 30, 0, 40}, 2};
  AdvantageOptions o = options(4, RewardScaling::none, {1.0, 2.0});
  o.aggregation = RewardAggregation::normalize_then_sum;
  const GroupAdvantages a = group_advantages(r, o);
  const std::vector<double> first{1, 0, 1, 0}, second{10, 20, 30, 40};
  std::vector<double> sums(4);
  for (size_t i = 0; i < 4; ++i) {
    sums[i] = (first[i] - 0.5) / (nan_std(first) + 1e-4) + 2.0 * (second[i] - 25.0) / (nan_std(second) + 1e-4);
  }
  const double mean = nan_mean(sums), scale = nan_std(sums) + 1e-4;
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(a.advantages[i], (sums[i] - mean) / scale, kTight);
}

TEST(GroupAdvantages, RefusesTablesThatAreNotWholeGroups) {
  EXPECT_THROW(group_advantages(one_function({1, 2, 3}), options(2)), std::invalid_argument);
  EXPECT_THROW(group_advantages(RewardTable{{1, 2}, 2}, options(1, RewardScaling::group, {1.0})), std::invalid_argument)
      << "two functions, one weight";
}

LeaveOneOutOptions rloo(int64_t group, double beta = 0.0, std::vector<double> weights = {1.0}) {
  LeaveOneOutOptions o;
  o.group_size = group;
  o.beta = beta;
  o.weights = std::move(weights);
  return o;
}

TEST(LeaveOneOutAdvantages, EachRewardLessItsSiblingsMean) {
  // Group 1 {1, 0, 0, 3}: siblings' means 1, 4/3, 4/3, 1/3. Group 2 {2, 2, 2, 2}: 0 each.
  const GroupAdvantages a = leave_one_out_advantages(one_function({1, 0, 0, 3, 2, 2, 2, 2}), {}, rloo(4));
  const std::vector<double> expected{0.0, -4.0 / 3.0, -4.0 / 3.0, 8.0 / 3.0, 0, 0, 0, 0};
  for (size_t i = 0; i < 8; ++i) EXPECT_NEAR(a.advantages[i], expected[i], kTight) << i;
  EXPECT_DOUBLE_EQ(a.zero_std_fraction, 0.5) << "one of two groups has no spread";
  EXPECT_NEAR(a.reward_mean, 12.0 / 8.0, kTight);
}

TEST(LeaveOneOutAdvantages, TheKlPenaltyEntersTheRewardButNotItsStatistics) {
  // beta 0.1, KL sums {2, -1, 0, 4}: penalised rewards {0.8, 1.1, 1, -0.4}.
  const GroupAdvantages a = leave_one_out_advantages(one_function({1, 1, 1, 0}), {2, -1, 0, 4}, rloo(2, 0.1));
  EXPECT_NEAR(a.advantages[0], 0.8 - 1.1, kTight);
  EXPECT_NEAR(a.advantages[1], 1.1 - 0.8, kTight);
  EXPECT_NEAR(a.advantages[2], 1.0 - (-0.4), kTight);
  EXPECT_NEAR(a.reward_mean, 0.75, kTight) << "the logged reward is the functions' weighted sum";
  EXPECT_DOUBLE_EQ(a.zero_std_fraction, 0.0) << "the first group's rewards are equal, its penalised ones not";
  EXPECT_THROW(leave_one_out_advantages(one_function({1, 1}), {}, rloo(2, 0.1)), std::invalid_argument)
      << "beta without KL sums";
}

TEST(LeaveOneOutAdvantages, ClippedThenNormalisedOverTheScorableCompletions) {
  LeaveOneOutOptions o = rloo(2);
  o.clip_range = std::make_pair(-1.0, 1.0);
  o.normalize = true;
  // Clipped: {1, 0, -1, 0.5, missing, 3 -> 1}; the third group has one scorable completion.
  const GroupAdvantages a = leave_one_out_advantages(one_function({5, 0, -2, 0.5, kNan, 3}), {}, o);
  const std::vector<double> raw{1.0, -1.0, -1.5, 1.5};  // the unscorable one and its lone sibling: NaN
  const double mean = nan_mean(raw), scale = nan_std(raw) + 1e-4;
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(a.advantages[i], (raw[i] - mean) / scale, kTight) << i;
  EXPECT_EQ(a.advantages[4], 0.0) << "unscorable";
  EXPECT_EQ(a.advantages[5], 0.0) << "no scorable sibling: no baseline";
  EXPECT_NEAR(a.reward_mean, (5 + 0 - 2 + 0.5 + 3) / 5.0, kTight) << "unclipped, the unscorable left out";
}

TEST(LeaveOneOutAdvantages, AGroupOfOneHasNoBaseline) {
  const GroupAdvantages a = leave_one_out_advantages(one_function({3, -1}), {}, rloo(1));
  EXPECT_EQ(a.advantages[0], 0.0);
  EXPECT_EQ(a.advantages[1], 0.0);
  EXPECT_DOUBLE_EQ(a.zero_std_fraction, 1.0);
}

}  // namespace
}  // namespace st

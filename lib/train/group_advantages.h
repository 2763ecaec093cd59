// Group-relative advantages (GRPO, RLOO and the online objectives after them): a pure function of the
// completions' rewards, their groups (the G completions of one prompt lie consecutively) and the
// options, as TRL's GRPOTrainer (1.16) computes them over the whole generation batch of every
// rank. A reward a function could not give is NaN (TRL's None); a completion with no reward at
// all is unscorable: advantage 0, and out of the reward statistics. Means and n-1 standard
// deviations are over the valid values; a group with one valid value has advantage 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/enum_names.h"

namespace st {

// grpo.scale_rewards: what the centred rewards are divided by (plus 1e-4): each group's standard
// deviation, the whole batch's, or nothing (Dr. GRPO).
enum class RewardScaling { group, batch, none };
template <>
struct EnumNames<RewardScaling> {
  static constexpr NamedValue<RewardScaling> table[] = {
      {RewardScaling::group, "group"}, {RewardScaling::batch, "batch"}, {RewardScaling::none, "none"}};
};

// grpo.multi_objective_aggregation: with several reward functions, weigh and sum the rewards
// and then normalise the sums (sum_then_normalize), or normalise each function's rewards in its
// group first, then weigh, sum and normalise the sums over the batch (normalize_then_sum, GDPO).
enum class RewardAggregation { sum_then_normalize, normalize_then_sum };
template <>
struct EnumNames<RewardAggregation> {
  static constexpr NamedValue<RewardAggregation> table[] = {
      {RewardAggregation::sum_then_normalize, "sum_then_normalize"},
      {RewardAggregation::normalize_then_sum, "normalize_then_sum"}};
};

struct AdvantageOptions {
  int64_t group_size = 8;       // completions per prompt (grpo.num_generations)
  RewardScaling scaling = RewardScaling::group;
  RewardAggregation aggregation = RewardAggregation::sum_then_normalize;
  std::vector<double> weights;  // one per reward function
};

// rewards[i * F + f]: function f's reward of completion i (NaN: none), F = weights.size().
struct RewardTable {
  std::vector<double> values;
  size_t functions = 0;

  size_t completions() const { return functions == 0 ? 0 : values.size() / functions; }
  double at(size_t completion, size_t function) const { return values[completion * functions + function]; }
};

struct GroupAdvantages {
  std::vector<double> advantages;  // one per completion
  // What TRL logs of the generation: the weighted sums' mean and n-1 std over the scorable
  // completions (reward, reward_std), each function's over its valid values
  // (rewards/<name>/mean, /std), and the share of completions whose scale was 0
  // (frac_reward_zero_std). NaN where no value is defined (as TRL logs it).
  double reward_mean = 0.0, reward_std = 0.0;
  std::vector<double> function_means, function_stds;
  double zero_std_fraction = 0.0;
};

// Throws std::invalid_argument when the table does not fit the options (its size is not a
// multiple of the group, or the weights are not one per function).
GroupAdvantages group_advantages(const RewardTable& rewards, const AdvantageOptions& options);

// RLOO (TRL's RLOOTrainer, 1.16): each completion's reward (weighted sum, clipped to
// `clip_range` where given, minus beta x its KL sum, the first-order estimate: sum of old - ref
// log-probs over its tokens) less the mean of its group's other scorable completions; optionally
// normalised over the batch's scorable completions. An unscorable completion, and the only
// scorable one of its group, get advantage 0. frac_reward_zero_std counts groups here (TRL's
// RLOO logs the share of groups), the reward statistics leave the KL and the clipping out.
struct LeaveOneOutOptions {
  int64_t group_size = 2;        // rloo.num_generations
  std::vector<double> weights;   // one per reward function
  double beta = 0.05;            // the KL penalty in the reward; 0: none (no KL sums needed)
  bool normalize = false;        // normalize_advantages
  std::optional<std::pair<double, double>> clip_range;  // reward_clip_range: [low, high]
};

// `kl`: each completion's KL sum (one per completion; may be empty with beta 0). Throws
// std::invalid_argument as group_advantages does, and for KL sums that do not fit.
GroupAdvantages leave_one_out_advantages(const RewardTable& rewards, const std::vector<double>& kl,
                                         const LeaveOneOutOptions& options);

// The n-1 standard deviation over the non-NaN values (NaN with fewer than two), TRL's nanstd.
double nan_std(const std::vector<double>& values);
double nan_mean(const std::vector<double>& values);  // NaN with none

}  // namespace st

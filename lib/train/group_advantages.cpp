#include "train/group_advantages.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace st {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kScaleFloor = 1e-4;  // TRL's: added to every scale, so a zero one divides safely

// torch.isclose(std, 0) with its default tolerances: |std| <= 1e-8 (NaN is not close).
bool is_zero_scale(double scale) { return std::abs(scale) <= 1e-8; }

// The weighted sum of a row's valid values (NaN counts 0: torch.nansum).
double weighted_nansum(const std::vector<double>& row, const std::vector<double>& weights) {
  double sum = 0.0;
  for (size_t f = 0; f < row.size(); ++f) {
    if (!std::isnan(row[f])) sum += row[f] * weights[f];
  }
  return sum;
}

std::vector<double> slice(const std::vector<double>& values, size_t first, size_t count) {
  return {values.begin() + static_cast<std::ptrdiff_t>(first), values.begin() + static_cast<std::ptrdiff_t>(first + count)};
}

std::vector<double> column(const RewardTable& rewards, size_t function) {
  std::vector<double> values(rewards.completions());
  for (size_t i = 0; i < values.size(); ++i) values[i] = rewards.at(i, function);
  return values;
}

// Each completion's value minus its group's mean, over `scale` of its group (or of the batch) +
// the floor; NaN where the value, the mean or the scale is undefined.
struct Normalised {
  std::vector<double> values;
  std::vector<double> scales;  // the scale each value was (or, unscaled, would be) divided by
};
Normalised normalise(const std::vector<double>& values, size_t group_size, RewardScaling scaling) {
  Normalised out{std::vector<double>(values.size()), std::vector<double>(values.size())};
  const double batch_scale = scaling == RewardScaling::batch && values.size() > 1 ? nan_std(values) : 0.0;
  for (size_t first = 0; first < values.size(); first += group_size) {
    const std::vector<double> group = slice(values, first, group_size);
    const double mean = nan_mean(group);
    double scale = scaling == RewardScaling::batch ? batch_scale : (group_size > 1 ? nan_std(group) : 0.0);
    for (size_t k = 0; k < group_size; ++k) {
      const double centred = values[first + k] - mean;
      out.values[first + k] = scaling == RewardScaling::none ? centred : centred / (scale + kScaleFloor);
      out.scales[first + k] = scale;
    }
  }
  return out;
}

// The sum and count of the non-NaN values (torch.nansum and the valid count).
struct ValidSum {
  double sum = 0.0;
  size_t count = 0;
};
ValidSum valid_sum(const std::vector<double>& values) {
  ValidSum valid;
  for (const double v : values) {
    if (std::isnan(v)) continue;
    valid.sum += v;
    ++valid.count;
  }
  return valid;
}

// Each completion's weighted reward sum; NaN where no function scored it (unscorable).
std::vector<double> weighted_totals(const RewardTable& rewards, const std::vector<double>& weights) {
  std::vector<double> totals(rewards.completions());
  for (size_t i = 0; i < totals.size(); ++i) {
    const std::vector<double> row = slice(rewards.values, i * rewards.functions, rewards.functions);
    totals[i] = valid_sum(row).count > 0 ? weighted_nansum(row, weights) : kNan;
  }
  return totals;
}

// Throws std::invalid_argument unless the table holds whole groups and one weight per function.
void check_table(const RewardTable& rewards, const std::vector<double>& weights, int64_t group_size, const char* what) {
  const size_t functions = rewards.functions;
  if (functions == 0 || weights.size() != functions) {
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(weights.size()) + " reward weights for " +
                                std::to_string(functions) + " reward functions");
  }
  const size_t completions = rewards.completions();
  const auto group = static_cast<size_t>(std::max<int64_t>(group_size, 0));
  if (group == 0 || rewards.values.size() != completions * functions || completions % group != 0) {
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(completions) +
                                " completions are not whole groups of " + std::to_string(group_size));
  }
}

// The logged reward statistics: the weighted sums' (`totals`, NaN where unscorable) and each
// function's over its valid values.
void add_reward_statistics(const RewardTable& rewards, const std::vector<double>& totals, GroupAdvantages& out) {
  out.reward_mean = nan_mean(totals);
  out.reward_std = nan_std(totals);
  for (size_t f = 0; f < rewards.functions; ++f) {
    const std::vector<double> values = column(rewards, f);
    out.function_means.push_back(nan_mean(values));
    out.function_stds.push_back(nan_std(values));
  }
}

}  // namespace

double nan_mean(const std::vector<double>& values) {
  const ValidSum valid = valid_sum(values);
  return valid.count == 0 ? kNan : valid.sum / static_cast<double>(valid.count);
}

double nan_std(const std::vector<double>& values) {
  const double mean = nan_mean(values);
  double squares = 0.0;
  size_t count = 0;
  for (const double v : values) {
    if (std::isnan(v)) continue;
    squares += (v - mean) * (v - mean);
    ++count;
  }
  return count < 2 ? kNan : std::sqrt(squares / static_cast<double>(count - 1));
}

GroupAdvantages group_advantages(const RewardTable& rewards, const AdvantageOptions& options) {
  check_table(rewards, options.weights, options.group_size, "group advantages");
  const size_t functions = rewards.functions;
  const auto group = static_cast<size_t>(options.group_size);
  const size_t completions = rewards.completions();
  const std::vector<double> totals = weighted_totals(rewards, options.weights);  // NaN: unscorable
  Normalised scaled;
  if (options.aggregation == RewardAggregation::sum_then_normalize) {
    scaled = normalise(totals, group, options.scaling);
  } else {
    // Each function's rewards normalised in their groups, then weighed and summed; the sums are
    // normalised over the batch whatever grpo.scale_rewards says (as TRL does).
    std::vector<Normalised> per_function;
    for (size_t f = 0; f < functions; ++f) per_function.push_back(normalise(column(rewards, f), group, RewardScaling::group));
    std::vector<double> sums(completions);
    for (size_t i = 0; i < completions; ++i) {
      std::vector<double> row(functions);
      for (size_t f = 0; f < functions; ++f) row[f] = per_function[f].values[i];
      sums[i] = std::isnan(totals[i]) ? kNan : weighted_nansum(row, options.weights);
    }
    scaled = normalise(sums, completions, RewardScaling::group);  // the whole batch as one group
  }
  GroupAdvantages out;
  out.advantages.resize(completions);
  size_t zero_scales = 0;
  for (size_t i = 0; i < completions; ++i) {
    out.advantages[i] = std::isnan(scaled.values[i]) ? 0.0 : scaled.values[i];
    zero_scales += is_zero_scale(scaled.scales[i]);
  }
  out.zero_std_fraction = static_cast<double>(zero_scales) / static_cast<double>(completions);
  add_reward_statistics(rewards, totals, out);
  return out;
}

GroupAdvantages leave_one_out_advantages(const RewardTable& rewards, const std::vector<double>& kl,
                                         const LeaveOneOutOptions& options) {
  check_table(rewards, options.weights, options.group_size, "leave-one-out advantages");
  const auto group = static_cast<size_t>(options.group_size);
  const size_t completions = rewards.completions();
  const bool penalised = options.beta != 0.0;
  if (penalised && kl.size() != completions) {
    throw std::invalid_argument("leave-one-out advantages: " + std::to_string(kl.size()) + " KL sums for " +
                                std::to_string(completions) + " completions (beta " + std::to_string(options.beta) + ")");
  }
  const std::vector<double> totals = weighted_totals(rewards, options.weights);  // NaN: unscorable
  std::vector<double> penalised_rewards = totals;
  for (size_t i = 0; i < completions; ++i) {
    double& r = penalised_rewards[i];
    if (options.clip_range) r = std::clamp(r, options.clip_range->first, options.clip_range->second);  // NaN stays
    if (penalised) r -= options.beta * kl[i];
  }
  GroupAdvantages out;
  out.advantages.assign(completions, 0.0);
  size_t zero_std_groups = 0;
  for (size_t first = 0; first < completions; first += group) {
    const std::vector<double> values = slice(penalised_rewards, first, group);
    zero_std_groups += group > 1 ? is_zero_scale(nan_std(values)) : 1;
    if (group == 1) continue;  // no sibling: no baseline (TRL's zeros)
    const ValidSum valid = valid_sum(values);
    // The siblings' mean: NaN for an unscorable completion and for a lone scorable one (0 / 0).
    for (size_t k = 0; k < group; ++k) {
      const double baseline = (valid.sum - values[k]) / (static_cast<double>(valid.count) - 1.0);
      out.advantages[first + k] = values[k] - baseline;
    }
  }
  if (group > 1 && options.normalize) {  // over the scorable completions of the batch
    const double mean = nan_mean(out.advantages), scale = nan_std(out.advantages) + kScaleFloor;
    for (double& a : out.advantages) a = (a - mean) / scale;
  }
  for (double& a : out.advantages) {
    if (std::isnan(a)) a = 0.0;
  }
  out.zero_std_fraction = static_cast<double>(zero_std_groups) / static_cast<double>(completions / group);
  add_reward_statistics(rewards, totals, out);
  return out;
}

}  // namespace st

#include "train/group_advantages.h"

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

bool any_valid(const std::vector<double>& row) {
  for (const double v : row) {
    if (!std::isnan(v)) return true;
  }
  return false;
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

}  // namespace

double nan_mean(const std::vector<double>& values) {
  double sum = 0.0;
  size_t count = 0;
  for (const double v : values) {
    if (std::isnan(v)) continue;
    sum += v;
    ++count;
  }
  return count == 0 ? kNan : sum / static_cast<double>(count);
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
  const size_t functions = rewards.functions;
  const size_t group = static_cast<size_t>(options.group_size);
  if (functions == 0 || options.weights.size() != functions) {
    throw std::invalid_argument("group advantages: " + std::to_string(options.weights.size()) +
                                " reward weights for " + std::to_string(functions) + " reward functions");
  }
  const size_t completions = rewards.completions();
  if (group == 0 || rewards.values.size() != completions * functions || completions % group != 0) {
    throw std::invalid_argument("group advantages: " + std::to_string(completions) +
                                " completions are not whole groups of " + std::to_string(group));
  }
  std::vector<bool> scorable(completions);  // some function gave it a reward
  std::vector<double> totals(completions);  // weighted sums; NaN: unscorable
  for (size_t i = 0; i < completions; ++i) {
    const std::vector<double> row = slice(rewards.values, i * functions, functions);
    scorable[i] = any_valid(row);
    totals[i] = scorable[i] ? weighted_nansum(row, options.weights) : kNan;
  }
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
      sums[i] = scorable[i] ? weighted_nansum(row, options.weights) : kNan;
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
  out.reward_mean = nan_mean(totals);
  out.reward_std = nan_std(totals);
  for (size_t f = 0; f < functions; ++f) {
    const std::vector<double> values = column(rewards, f);
    out.function_means.push_back(nan_mean(values));
    out.function_stds.push_back(nan_std(values));
  }
  return out;
}

}  // namespace st

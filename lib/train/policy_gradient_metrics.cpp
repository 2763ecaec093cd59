#include "train/policy_gradient_metrics.h"

#include <ATen/ATen.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "train/group_advantages.h"
#include "util/host_sync.h"

namespace st {
namespace {

// The columns. The sampling_ ones compare the sampler's log-probs with the generating policy's
// (sampled completions only; NaN for replayed ones).
enum Column : size_t {
  kl_sum, tokens, entropy_sum, low, high, region, clip_units, low_min, high_max,
  sampling_difference_sum, sampling_difference_max, sampling_ratio_sum, sampling_ratio_min, sampling_ratio_max,
  kColumns
};
constexpr MicroMetric kColumnsTable[kColumns] = {
    {"kl_sum", RankCombine::sum},       {"tokens", RankCombine::sum},     {"entropy_sum", RankCombine::sum},
    {"low_clipped", RankCombine::sum},  {"high_clipped", RankCombine::sum}, {"region_clipped", RankCombine::sum},
    {"clip_units", RankCombine::sum},   {"low_min", RankCombine::min},    {"high_max", RankCombine::max},
    {"sampling_difference_sum", RankCombine::sum}, {"sampling_difference_max", RankCombine::max},
    {"sampling_ratio_sum", RankCombine::sum}, {"sampling_ratio_min", RankCombine::min},
    {"sampling_ratio_max", RankCombine::max}};

// TRL's nanmin / nanmax over one rank's completions, on the device (NaN when every value is).
at::Tensor nan_extreme(const at::Tensor& values, bool lowest) {
  const double fill = lowest ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  const at::Tensor v = values.detach().to(at::kDouble);
  const at::Tensor filled = at::where(v.isnan(), at::full({}, fill, v.options()), v);
  const at::Tensor extreme = filled.numel() == 0 ? at::full({}, fill, v.options()) : (lowest ? filled.min() : filled.max());
  return at::where(extreme.isinf(), at::full({}, std::numeric_limits<double>::quiet_NaN(), v.options()), extreme);
}

// TRL's sampling/ metrics' sums over this micro-batch's loss tokens: |old - sampled| and
// exp(old - sampled), old the generating policy's log-probs (the policy's own when on-policy).
void add_sampling_columns(const MicroBatch& batch, const at::Tensor& logps, const at::Tensor& mask,
                          std::vector<at::Tensor>& out) {
  const auto nan = at::full({}, std::numeric_limits<double>::quiet_NaN(), at::TensorOptions(at::kDouble).device(logps.device()));
  for (size_t c = sampling_difference_sum; c <= sampling_ratio_max; ++c) out[kOutputSums + c] = nan;
  if (!batch.sampling_token_logps.defined()) return;
  const at::Tensor taken = mask > 0;
  const at::Tensor old = (batch.old_token_logps.defined() ? batch.old_token_logps : logps.detach()).to(at::kDouble);
  const at::Tensor sampled = to_device_async(batch.sampling_token_logps, logps.device()).to(at::kDouble);
  const at::Tensor generating = old.masked_select(taken);
  const at::Tensor difference = (generating - sampled).abs();
  const at::Tensor ratio = (generating - sampled).exp();
  out[kOutputSums + sampling_difference_sum] = difference.sum();
  out[kOutputSums + sampling_difference_max] = nan_extreme(difference, false);
  out[kOutputSums + sampling_ratio_sum] = ratio.sum();
  out[kOutputSums + sampling_ratio_min] = nan_extreme(ratio, true);
  out[kOutputSums + sampling_ratio_max] = nan_extreme(ratio, false);
}

}  // namespace

std::vector<MicroMetric> policy_gradient_metric_columns() {
  return std::vector<MicroMetric>(std::begin(kColumnsTable), std::end(kColumnsTable));
}

void policy_gradient_columns(const MicroBatch& batch, const PolicyGradientTerms& terms, const at::Tensor& logps,
                             const at::Tensor& mask, const at::Tensor& entropies, std::vector<at::Tensor>& out) {
  const auto options64 = at::TensorOptions(at::kDouble).device(logps.device());
  out.resize(kOutputSums + kColumns, at::zeros({}, options64));
  const at::Tensor mask64 = mask.to(at::kDouble);
  out[kOutputSums + kl_sum] = terms.kl_sum.defined() ? terms.kl_sum.to(at::kDouble) : at::zeros({}, options64);
  out[kOutputSums + tokens] = mask64.sum();
  out[kOutputSums + entropy_sum] = (entropies.to(at::kDouble) * mask64).sum();
  out[kOutputSums + low] = terms.low_clipped;
  out[kOutputSums + high] = terms.high_clipped;
  out[kOutputSums + region] = terms.region_clipped;
  out[kOutputSums + clip_units] = terms.clip_units;
  out[kOutputSums + low_min] = nan_extreme(terms.low_per_sequence, true);
  out[kOutputSums + high_max] = nan_extreme(terms.high_per_sequence, false);
  add_sampling_columns(batch, logps, mask, out);
}

void add_policy_gradient_metrics(const std::vector<std::vector<double>>& combined, LoggedPolicyMetrics logged,
                                 nlohmann::ordered_json& record) {
  if (combined.empty()) return;
  // TRL's global_masked_mean: a sum over the count clamped at 1.
  const auto over = [](double sum, double count) { return sum / std::max(count, 1.0); };
  // The sampler's metrics of a micro-batch without loss tokens are none (left out of the mean).
  const auto per_token = [](double sum, double count) {
    return count > 0.0 ? sum / count : std::numeric_limits<double>::quiet_NaN();
  };
  const std::vector<std::pair<const char*, std::function<double(const std::vector<double>&)>>> metrics = {
      {"kl", [&](const std::vector<double>& r) { return over(r[kl_sum], r[tokens]); }},
      {"entropy", [&](const std::vector<double>& r) { return over(r[entropy_sum], r[tokens]); }},
      {"clip_ratio/low_mean", [&](const std::vector<double>& r) { return over(r[low], r[clip_units]); }},
      {"clip_ratio/low_min", [](const std::vector<double>& r) { return r[low_min]; }},
      {"clip_ratio/high_mean", [&](const std::vector<double>& r) { return over(r[high], r[clip_units]); }},
      {"clip_ratio/high_max", [](const std::vector<double>& r) { return r[high_max]; }},
      {"clip_ratio/region_mean", [&](const std::vector<double>& r) { return over(r[region], r[clip_units]); }},
      {"sampling/sampling_logp_difference/mean",
       [&](const std::vector<double>& r) { return per_token(r[sampling_difference_sum], r[tokens]); }},
      {"sampling/sampling_logp_difference/max", [](const std::vector<double>& r) { return r[sampling_difference_max]; }},
      {"sampling/importance_sampling_ratio/min", [](const std::vector<double>& r) { return r[sampling_ratio_min]; }},
      {"sampling/importance_sampling_ratio/mean",
       [&](const std::vector<double>& r) { return per_token(r[sampling_ratio_sum], r[tokens]); }},
      {"sampling/importance_sampling_ratio/max", [](const std::vector<double>& r) { return r[sampling_ratio_max]; }}};
  for (const auto& [name, value] : metrics) {
    if (std::string(name) == "kl" && !logged.kl) continue;
    if (std::string(name).rfind("sampling/", 0) == 0 && !logged.sampling) continue;
    // TRL averages a window's values leaving NaN out (a micro-batch whose completions all lack
    // tokens has no clip_ratio/low_min), and logs null when none is left.
    std::vector<double> values;
    for (const std::vector<double>& row : combined) values.push_back(value(row));
    const double mean = nan_mean(values);
    record[name] = std::isnan(mean) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(mean);
  }
}

}  // namespace st

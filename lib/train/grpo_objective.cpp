// train.stage = grpo: GRPO and its variants (DAPO, Dr. GRPO, BNPO, GSPO) as TRL 1.16's
// GRPOTrainer computes them, on completions a rollout phase made of the dataset's prompts
// (rollout_phase.h): each micro-batch carries its completions' advantages and the generating
// policy's and the reference's per-token log-probs; the loss is policy_gradient_loss.h's on the
// head's per-token lines, and kl, entropy and the clip ratios are TRL's per-micro-batch metrics.
#include <ATen/ATen.h>

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>

#include "train/group_advantages.h"
#include "train/objective.h"
#include "train/policy_gradient_loss.h"
#include "util/errors.h"
#include "util/host_sync.h"

namespace st {
namespace {

// The per-micro-batch metric columns, in micro_metric_columns' order.
// The sampling_ columns compare the sampler's log-probs with the generating policy's (sampled
// completions only; NaN for replayed ones).
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

class GrpoObjective : public Objective {
 public:
  Stage stage() const override { return Stage::grpo; }
  PairKind example_kind() const override { return PairKind::prompt; }
  HeadOutput head_output() const override { return HeadOutput::token_lines_with_entropies; }
  double logit_temperature(const ObjectiveSections& sections) const override { return sections.grpo.temperature; }
  bool needs_reference(const TrainConfig& config) const override { return config.grpo.beta > 0.0; }
  void check_config(const TrainConfig& config) const override;
  std::string describe(const TrainConfig& config, const char* reference) const override;
  // The step's loss is the mean over its completions (loss_type's normaliser is in each
  // micro-batch's sum: policy_gradient_summed_loss).
  double loss_denominator(const LossSums& sums) const override { return sums.pairs; }
  bool reports(const LossSums::Field& field) const override { return !field.preference; }
  std::vector<MicroMetric> micro_metric_columns() const override {
    return std::vector<MicroMetric>(std::begin(kColumnsTable), std::end(kColumnsTable));
  }
  void add_micro_batch_metrics(const std::vector<std::vector<double>>& combined, const ObjectiveSections& sections,
                               nlohmann::ordered_json& record) const override;

 protected:
  at::Tensor summed_loss(const MicroBatch& batch, const at::Tensor& policy, const at::Tensor& reference,
                         const at::Tensor& target_tokens, const ObjectiveSections& sections,
                         double micro_batch_weight, std::vector<at::Tensor>* outputs) const override;
};

PolicyGradientOptions loss_options(const GrpoOptions& grpo) {
  PolicyGradientOptions options;
  options.loss = grpo.loss_type;
  options.level = grpo.importance_sampling_level;
  options.epsilon_low = grpo.epsilon;
  options.epsilon_high = grpo.epsilon_high < 0.0 ? grpo.epsilon : grpo.epsilon_high;
  options.delta = grpo.delta;
  options.beta = grpo.beta;
  options.bias_correction_kl = grpo.use_bias_correction_kl;
  options.max_completion_length = grpo.max_completion_length;
  return options;
}

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

void GrpoObjective::check_config(const TrainConfig& config) const {
  // Its micro-batches are train.micro_batch completions in the generation's order, one per row.
  const auto refuse = [](const std::string& setting, const char* why) {
    throw ConfigError(setting + " with train.stage = grpo: " + why);
  };
  if (config.data.packing) refuse("data.packing = true", "its completions are one per row; set data.packing = false");
  if (config.data.micro_batch_tokens != 0) {
    refuse("data.micro_batch_tokens = " + std::to_string(config.data.micro_batch_tokens),
           "its micro-batches are train.micro_batch completions; set data.micro_batch_tokens = 0");
  }
  if (config.data.group_by_length) {
    refuse("data.group_by_length = true", "its micro-batches keep the generation's order; set it to false");
  }
  if (config.dist.context_parallel != 1) {
    refuse("dist.context_parallel = " + std::to_string(config.dist.context_parallel),
           "its rows are not split over ranks yet; set dist.context_parallel = 1");
  }
  if (!config.data.val.empty() || config.data.val_size > 0.0) {
    refuse("validation data (data.val, data.val_size)", "evaluating generates completions, which is not built yet; "
                                                        "leave data.val empty and data.val_size = 0");
  }
}

std::string GrpoObjective::describe(const TrainConfig& config, const char* reference) const {
  const GrpoOptions& g = config.grpo;
  std::ostringstream out;
  out << "grpo (" << enum_name(g.loss_type) << ", " << g.num_generations << " completions per prompt, beta " << g.beta
      << (g.beta > 0.0 ? std::string(", reference ") + reference : std::string()) << ")";
  return out.str();
}

at::Tensor GrpoObjective::summed_loss(const MicroBatch& batch, const at::Tensor& policy, const at::Tensor& reference,
                                      const at::Tensor&, const ObjectiveSections& sections, double micro_batch_weight,
                                      std::vector<at::Tensor>* outputs) const {
  if (!outputs) return policy.sum();  // padding: no completion (the caller zeroes it)
  const GrpoOptions& grpo = sections.grpo;
  const PolicyGradientOptions options = loss_options(grpo);
  const at::Tensor logps = policy[static_cast<int64_t>(HeadLine::logps)];
  const at::Tensor mask = policy[static_cast<int64_t>(HeadLine::targets)].detach();
  const at::Tensor entropies = policy[static_cast<int64_t>(HeadLine::entropies)].detach();
  PolicyGradientInputs inputs;
  inputs.logps = logps;
  inputs.mask = mask;
  inputs.old_logps = batch.old_token_logps;
  inputs.ref_logps = reference;
  inputs.advantages = to_device_async(batch.advantages, logps.device());
  if (grpo.top_entropy_quantile < 1.0) inputs.entropy_mask = high_entropy_mask(entropies, mask, grpo.top_entropy_quantile);
  const PolicyGradientTerms terms = policy_gradient_terms(inputs, options);

  StepScale scale;
  scale.dapo = 1.0 / batch.generation_tokens_per_completion;  // set by the rollout phase (> 0)
  scale.completions_per_micro_batch = micro_batch_weight * static_cast<double>(batch.pairs);

  const auto options64 = at::TensorOptions(at::kDouble).device(logps.device());
  std::vector<at::Tensor>& out = *outputs;
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
  return policy_gradient_summed_loss(terms, options, scale);
}

void GrpoObjective::add_micro_batch_metrics(const std::vector<std::vector<double>>& combined,
                                            const ObjectiveSections& sections, nlohmann::ordered_json& record) const {
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
  const bool sampled = sections.grpo.rollouts.empty();
  for (const auto& [name, value] : metrics) {
    if (std::string(name) == "kl" && sections.grpo.beta == 0.0) continue;  // TRL logs it with a KL term only
    if (std::string(name).rfind("sampling/", 0) == 0 && !sampled) continue;  // replayed: no sampler
    // TRL averages a window's values leaving NaN out (a micro-batch whose completions all lack
    // tokens has no clip_ratio/low_min), and logs null when none is left.
    std::vector<double> values;
    for (const std::vector<double>& row : combined) values.push_back(value(row));
    const double mean = nan_mean(values);
    record[name] = std::isnan(mean) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(mean);
  }
}

const Objective& grpo_objective() {
  static const GrpoObjective objective;
  return objective;
}

}  // namespace st

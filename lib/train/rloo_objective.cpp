// train.stage = rloo: RLOO as TRL 1.16's RLOOTrainer computes it, on the same rollout phase as
// grpo (rollout_phase.h): the KL to the reference is a penalty in each completion's reward
// (beta x its summed log-ratio, generating policy over reference), the advantage is the reward
// less the mean of its group's other completions (leave_one_out_advantages), and the loss is one
// clipped ratio per completion from its summed log-probs over the generating policy's
// (leave_one_out_terms), averaged over the micro-batch. The generating policy's log-probs are
// computed at every generation, as TRL does, first step included.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "train/group_advantages.h"
#include "train/online_objective.h"
#include "train/policy_gradient_loss.h"
#include "util/errors.h"
#include "util/host_sync.h"
#include "util/text.h"

namespace st {

std::optional<std::pair<double, double>> reward_clip_bounds(const RlooOptions& options) {
  const std::string& text = options.reward_clip_range;
  if (trimmed(text).empty()) return std::nullopt;
  const std::string fix = "rloo.reward_clip_range = '" + text + "': write the two bounds, low <= high (e.g. -1.0, 1.0)";
  const std::vector<std::string> items = comma_items(text);  // which leaves empty items out: count the commas too
  if (items.size() != 2 || std::count(text.begin(), text.end(), ',') != 1) throw ConfigError(fix);
  const std::optional<double> low = whole_number(items[0]), high = whole_number(items[1]);
  if (!low || !high || !std::isfinite(*low) || !std::isfinite(*high) || *low > *high) throw ConfigError(fix);
  return std::make_pair(*low, *high);
}

namespace {

class RlooObjective : public OnlineObjective {
 public:
  Stage stage() const override { return Stage::rloo; }
  const RolloutOptions* rollout_options(const ObjectiveSections& sections) const override {
    return &sections.rloo.rollout;
  }
  GroupAdvantages generation_advantages(const RewardTable& rewards, const std::vector<double>& weights,
                                        const std::vector<double>& kl_sums,
                                        const ObjectiveSections& sections) const override {
    LeaveOneOutOptions options;
    options.group_size = sections.rloo.rollout.num_generations;
    options.weights = weights;
    options.beta = sections.rloo.beta;
    options.normalize = sections.rloo.normalize_advantages;
    options.clip_range = reward_clip_bounds(sections.rloo);
    return leave_one_out_advantages(rewards, kl_sums, options);
  }
  bool penalizes_rewards_with_kl(const ObjectiveSections& sections) const override { return sections.rloo.beta > 0.0; }
  bool always_computes_old_logps() const override { return true; }
  bool needs_reference(const TrainConfig& config) const override { return config.rloo.beta > 0.0; }
  void check_config(const TrainConfig& config) const override {
    OnlineObjective::check_config(config);
    reward_clip_bounds(config.rloo);
  }
  std::string describe(const TrainConfig& config, const char* reference) const override {
    const RlooOptions& r = config.rloo;
    std::ostringstream out;
    out << "rloo (" << r.rollout.num_generations << " completions per prompt, beta " << r.beta
        << (r.beta > 0.0 ? std::string(", reference ") + reference : std::string()) << ")";
    return out.str();
  }
  void add_micro_batch_metrics(const std::vector<std::vector<double>>& combined, const ObjectiveSections&,
                               nlohmann::ordered_json& record) const override {
    // RLOOTrainer logs kl once per generation (the rollout phase's) and no sampler metrics.
    add_policy_gradient_metrics(combined, LoggedPolicyMetrics{}, record);
  }

 protected:
  at::Tensor summed_loss(const MicroBatch& batch, const at::Tensor& policy, const at::Tensor&, const at::Tensor&,
                         const ObjectiveSections& sections, double micro_batch_weight,
                         std::vector<at::Tensor>* outputs) const override {
    if (!outputs) return policy.sum();  // padding: no completion (the caller zeroes it)
    const RlooOptions& rloo = sections.rloo;
    PolicyGradientOptions options;
    options.epsilon_low = rloo.epsilon;
    options.epsilon_high = rloo.epsilon_high < 0.0 ? rloo.epsilon : rloo.epsilon_high;
    const at::Tensor logps = policy[static_cast<int64_t>(HeadLine::logps)];
    const at::Tensor mask = policy[static_cast<int64_t>(HeadLine::targets)].detach();
    const at::Tensor entropies = policy[static_cast<int64_t>(HeadLine::entropies)].detach();
    PolicyGradientInputs inputs;
    inputs.logps = logps;
    inputs.mask = mask;
    inputs.old_logps = batch.old_token_logps;  // always computed at generation (always_computes_old_logps)
    inputs.advantages = to_device_async(batch.advantages, logps.device());
    const PolicyGradientTerms terms = leave_one_out_terms(inputs, options);
    StepScale scale;
    scale.completions_per_micro_batch = micro_batch_weight * static_cast<double>(batch.pairs);
    policy_gradient_columns(batch, terms, logps, mask, entropies, *outputs);
    return leave_one_out_summed_loss(terms, scale);
  }
};

}  // namespace

const Objective& rloo_objective() {
  static const RlooObjective objective;
  return objective;
}

}  // namespace st

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
#include "train/online_objective.h"
#include "train/policy_gradient_loss.h"
#include "util/errors.h"
#include "util/host_sync.h"

namespace st {
namespace {

class GrpoObjective : public OnlineObjective {
 public:
  Stage stage() const override { return Stage::grpo; }
  const RolloutOptions* rollout_options(const ObjectiveSections& sections) const override {
    return &sections.grpo.rollout;
  }
  GroupAdvantages generation_advantages(const RewardTable& rewards, const std::vector<double>& weights,
                                        const std::vector<double>& kl_sums,
                                        const ObjectiveSections& sections) const override;
  bool needs_reference(const TrainConfig& config) const override { return config.grpo.beta > 0.0; }
  at::Tensor values_over_ranks(const MicroBatch& batch, const at::Tensor& policy,
                               const ObjectiveSections& sections) const override;
  std::string describe(const TrainConfig& config, const char* reference) const override;
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
  options.max_completion_length = grpo.rollout.max_completion_length;
  return options;
}

}  // namespace

std::string GrpoObjective::describe(const TrainConfig& config, const char* reference) const {
  const GrpoOptions& g = config.grpo;
  std::ostringstream out;
  out << "grpo (" << enum_name(g.loss_type) << ", " << g.rollout.num_generations << " completions per prompt, beta " << g.beta
      << (g.beta > 0.0 ? std::string(", reference ") + reference : std::string()) << ")";
  return out.str();
}

// top_entropy_quantile's threshold is a quantile of every rank's masked entropies, as TRL's
// get_high_entropy_mask gathers them over its processes.
at::Tensor GrpoObjective::values_over_ranks(const MicroBatch& batch, const at::Tensor& policy,
                                            const ObjectiveSections& sections) const {
  if (sections.grpo.top_entropy_quantile >= 1.0) return {};
  if (batch.pairs == 0) return at::empty({0}, at::kFloat);  // padding: none of its own
  const at::Tensor mask = policy[static_cast<int64_t>(HeadLine::targets)].detach().to(at::kBool);
  return policy[static_cast<int64_t>(HeadLine::entropies)].detach().masked_select(mask).to(at::kFloat);
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
  if (grpo.top_entropy_quantile < 1.0) {
    inputs.entropy_mask = high_entropy_mask(entropies, mask, grpo.top_entropy_quantile, batch.ranks_values);
  }
  const PolicyGradientTerms terms = policy_gradient_terms(inputs, options);

  StepScale scale;
  scale.dapo = 1.0 / batch.generation_tokens_per_completion;  // set by the rollout phase (> 0)
  scale.completions_per_micro_batch = micro_batch_weight * static_cast<double>(batch.pairs);

  policy_gradient_columns(batch, terms, logps, mask, entropies, *outputs);
  return policy_gradient_summed_loss(terms, options, scale);
}

void GrpoObjective::add_micro_batch_metrics(const std::vector<std::vector<double>>& combined,
                                            const ObjectiveSections& sections, nlohmann::ordered_json& record) const {
  LoggedPolicyMetrics logged;
  logged.kl = sections.grpo.beta > 0.0;  // TRL logs it with a KL term only
  logged.sampling = sections.grpo.rollout.rollouts.empty();  // replayed: no sampler
  add_policy_gradient_metrics(combined, logged, record);
}

GroupAdvantages GrpoObjective::generation_advantages(const RewardTable& rewards, const std::vector<double>& weights,
                                                    const std::vector<double>&, const ObjectiveSections& sections) const {
  AdvantageOptions options;
  options.group_size = sections.grpo.rollout.num_generations;
  options.scaling = sections.grpo.scale_rewards;
  options.aggregation = sections.grpo.multi_objective_aggregation;
  options.weights = weights;
  return group_advantages(rewards, options);
}

const Objective& grpo_objective() {
  static const GrpoObjective objective;
  return objective;
}

}  // namespace st

// What the online objectives (grpo, rloo) share of the step contract: prompts in, completions
// from the rollout phase (rollout_phase.h) trained on per-token lines with entropies, the logits
// over the section's sampling temperature, the step's loss a mean over its completions, and TRL's
// per-micro-batch metrics (policy_gradient_metrics.h). Each one's file adds its section, its
// advantages and its loss.
#pragma once

#include <vector>

#include "train/objective.h"
#include "train/policy_gradient_metrics.h"

namespace st {

class OnlineObjective : public Objective {
 public:
  PairKind example_kind() const override { return PairKind::prompt; }
  HeadOutput head_output() const override { return HeadOutput::token_lines_with_entropies; }
  double logit_temperature(const ObjectiveSections& sections) const override {
    return rollout_options(sections)->temperature;
  }
  const RolloutOptions* rollout_options(const ObjectiveSections& sections) const override = 0;
  void check_config(const TrainConfig& config) const override { check_online_batches(config); }
  // The step's loss is the mean over its completions (the objective's normaliser is in each
  // micro-batch's sum).
  double loss_denominator(const LossSums& sums) const override { return sums.pairs; }
  bool reports(const LossSums::Field& field) const override { return !field.preference; }
  std::vector<MicroMetric> micro_metric_columns() const override { return policy_gradient_metric_columns(); }
};

}  // namespace st

// [grpo]: GRPO's section (train.stage = grpo), TRL 1.16's GRPOConfig names and defaults, declared
// once: the struct and, in bind(), its keys' help and ranges. What each key does to the loss is
// policy_gradient_loss.h's, to the advantages group_advantages.h's; the keys every online
// objective has (sampling, the generation's geometry, the rule rewards) are rollout_options.h's.
#pragma once

#include <cstdint>
#include <string>

#include "config/config_schema.h"
#include "train/group_advantages.h"
#include "train/policy_gradient_loss.h"
#include "train/rollout_options.h"

namespace st {

struct GrpoOptions {
  RolloutOptions rollout{"grpo", 8, 256};  // sampling, geometry, the replay file, the rule rewards
  GrpoLoss loss_type = GrpoLoss::dapo;
  RatioLevel importance_sampling_level = RatioLevel::token;
  double epsilon = 0.2;
  double epsilon_high = -1.0;  // -1: epsilon (TRL's None)
  double delta = 0.0;          // 0: none (TRL's None)
  double beta = 0.0;
  bool use_bias_correction_kl = false;
  RewardScaling scale_rewards = RewardScaling::group;
  RewardAggregation multi_objective_aggregation = RewardAggregation::sum_then_normalize;
  double top_entropy_quantile = 1.0;

  void bind(ConfigSchema& schema) {
    schema.section("grpo", "GRPO and its variants, online RL on rewards (train.stage = grpo; docs/grpo.md)");
    schema.add(&loss_type, "loss_type",
               "what the token losses are divided by: dapo = the generation's completion tokens (TRL's default); "
               "grpo = each completion's tokens; dr_grpo = max_completion_length; bnpo = each micro-batch's tokens");
    schema.add(&importance_sampling_level, "importance_sampling_level",
               "the ratio pi / pi_old per token, or per completion from its mean log-ratio (sequence: GSPO)");
    schema.add(&epsilon, "epsilon", "the ratio is clipped to [1 - epsilon, 1 + epsilon_high]", above(0));
    schema.add(&epsilon_high, "epsilon_high", "upper clip (DAPO's clip-higher)",
               at_least(-1).meaning("-1 = epsilon"));
    schema.add(&delta, "delta", "caps the unclipped ratio too (two-sided clipping)", at_least(0).meaning("0 = none"));
    schema.add(&beta, "beta", "KL coefficient against the reference model (0: no reference is kept)", at_least(0));
    schema.add(&use_bias_correction_kl, "use_bias_correction_kl", "the KL term times the importance ratio");
    schema.add(&scale_rewards, "scale_rewards",
               "what the centred rewards are divided by: each group's std, the batch's, or nothing (Dr. GRPO)");
    schema.add(&multi_objective_aggregation, "multi_objective_aggregation",
               "several rewards: weigh and sum, then normalise; or normalise each in its group first (GDPO)");
    schema.add(&top_entropy_quantile, "top_entropy_quantile",
               "only the tokens among this top share of entropies carry loss (1: all)", within(0, 1, false));
    rollout.bind(schema);
  }
};

}  // namespace st

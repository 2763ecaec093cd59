// [grpo]: GRPO's section (train.stage = grpo), TRL 1.16's GRPOConfig names and defaults, declared
// once: the struct and, in bind(), its keys' help and ranges. What each key does to the loss is
// policy_gradient_loss.h's, to the advantages group_advantages.h's; the generation's geometry
// (steps_per_generation, num_iterations) rollout_phase.h's.
#pragma once

#include <cstdint>
#include <string>

#include "config/config_schema.h"
#include "train/group_advantages.h"
#include "train/policy_gradient_loss.h"

namespace st {

struct GrpoOptions {
  int64_t num_generations = 8;  // completions per prompt (a group)
  GrpoLoss loss_type = GrpoLoss::dapo;
  RatioLevel importance_sampling_level = RatioLevel::token;
  double epsilon = 0.2;
  double epsilon_high = -1.0;  // -1: epsilon (TRL's None)
  double delta = 0.0;          // 0: none (TRL's None)
  double beta = 0.0;
  bool use_bias_correction_kl = false;
  RewardScaling scale_rewards = RewardScaling::group;
  RewardAggregation multi_objective_aggregation = RewardAggregation::sum_then_normalize;
  std::string reward_funcs;    // "think_format_reward, math_answer"
  std::string reward_weights;  // "1.0, 0.5"; empty: 1 each
  int64_t steps_per_generation = 0;  // micro-batches per generation and rank; 0: train.grad_accum
  int64_t num_iterations = 1;
  bool mask_truncated_completions = false;
  double top_entropy_quantile = 1.0;
  double temperature = 1.0;  // sampling's, and the log-probs' (logits over it)
  double top_p = 1.0;
  int64_t top_k = 0;         // 0: every token
  double min_p = 0.0;        // 0: none (TRL's None)
  int64_t max_completion_length = 256;
  std::string rollouts;  // a replay file; empty: sampled on the training ranks
  bool log_completions = false;  // train.output_dir/completions.jsonl
  // The rules' settings (reward_functions.h: RuleRewardOptions).
  bool think_prefilled = false;
  int64_t overlong_max_length = 1280;
  int64_t overlong_cache = 256;
  std::string answer_column = "solution";

  void bind(ConfigSchema& schema) {
    schema.section("grpo", "GRPO and its variants, online RL on rewards (train.stage = grpo; docs/grpo.md)");
    schema.add(&num_generations, "num_generations", "completions sampled per prompt (a group)", at_least(2));
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
    schema.add(&reward_funcs, "reward_funcs", "the rule rewards, by TRL's registry words and math_answer",
               any_value().lists("reward functions", "think_format_reward, math_answer"));
    schema.add(&reward_weights, "reward_weights", "one weight per reward function (empty: 1 each)",
               any_value().lists("weights", "1.0, 0.5"));
    schema.add(&steps_per_generation, "steps_per_generation",
               "micro-batches of each rank one generation feeds", at_least(0).meaning("0 = train.grad_accum"));
    schema.add(&num_iterations, "num_iterations", "updates on each generation", at_least(1));
    schema.add(&mask_truncated_completions, "mask_truncated_completions",
               "completions that end with neither EOS nor pad carry no loss");
    schema.add(&top_entropy_quantile, "top_entropy_quantile",
               "only the tokens among this top share of entropies carry loss (1: all)", within(0, 1, false));
    schema.add(&temperature, "temperature",
               "completions are sampled from the logits over it, and the log-probs and entropies are of them", above(0));
    schema.add(&top_p, "top_p", "sampling keeps the fewest most likely tokens whose probabilities reach it (nucleus)",
               [] {
                 KeyRule rule = within(0, 1, false);
                 rule.min_open = true;  // (0, 1]
                 return rule;
               }());
    schema.add(&top_k, "top_k", "sampling keeps the k most likely tokens", at_least(0).meaning("0 = all"));
    schema.add(&min_p, "min_p", "sampling keeps the tokens at least min_p x the most likely one's probability",
               within(0, 1, false).meaning("0 = all"));
    schema.add(&max_completion_length, "max_completion_length", "tokens a completion may have (dr_grpo's normaliser)",
               at_least(1).unit("tokens"));
    schema.add(&rollouts, "rollouts",
               "a replay file: line i holds {\"completion_ids\": [[...], ...]}, the num_generations completions of "
               "dataset row i, used as given; empty: completions are sampled on the training ranks");
    schema.add(&log_completions, "log_completions",
               "every completion, its rewards and advantage, one JSON line each in train.output_dir/completions.jsonl");
    schema.add(&think_prefilled, "think_prefilled",
               "think_format_reward reads each completion as if it began with <think> (templates that prefill it)");
    schema.add(&overlong_max_length, "overlong_max_length", "get_soft_overlong_punishment's max_completion_len",
               at_least(1).unit("tokens"));
    schema.add(&overlong_cache, "overlong_cache", "get_soft_overlong_punishment's soft_punish_cache",
               at_least(0).unit("tokens"));
    schema.add(&answer_column, "answer_column", "the dataset column math_answer compares with");
  }
};

}  // namespace st

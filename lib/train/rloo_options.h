// [rloo]: RLOO's section (train.stage = rloo), TRL 1.16's RLOOConfig names and defaults, declared
// once: the struct and, in bind(), its keys. The loss is policy_gradient_loss.h's
// leave_one_out_terms, the advantages group_advantages.h's leave_one_out_advantages; the keys
// every online objective has (sampling, the generation's geometry, the rule rewards) are
// rollout_options.h's, here with RLOOConfig's defaults (2 completions per prompt, 512 tokens).
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "config/config_schema.h"
#include "train/rollout_options.h"

namespace st {

struct RlooOptions {
  RolloutOptions rollout{"rloo", 2, 512};  // sampling, geometry, the replay file, the rule rewards
  double beta = 0.05;
  double epsilon = 0.2;
  double epsilon_high = -1.0;  // -1: epsilon (TRL's None)
  bool normalize_advantages = false;
  std::string reward_clip_range;  // "low, high"; empty: none (TRL's None)

  void bind(ConfigSchema& schema) {
    schema.section("rloo", "RLOO, online RL on rewards with a leave-one-out baseline (train.stage = rloo; "
                           "docs/grpo.md, \"RLOO\")");
    schema.add(&beta, "beta",
               "the KL penalty in the reward: beta x each completion's summed log-ratio to the reference "
               "(0: no reference is kept)", at_least(0));
    schema.add(&epsilon, "epsilon", "each completion's ratio is clipped to [1 - epsilon, 1 + epsilon_high]", above(0));
    schema.add(&epsilon_high, "epsilon_high", "upper clip", at_least(-1).meaning("-1 = epsilon"));
    schema.add(&normalize_advantages, "normalize_advantages",
               "the advantages less their mean, over their std (+1e-4), over the whole generation");
    schema.add(&reward_clip_range, "reward_clip_range",
               "the weighted rewards are clamped to [low, high] before the KL penalty",
               any_value().lists("bounds", "-1.0, 1.0"));
    rollout.bind(schema);
  }
};

// reward_clip_range's bounds (none when empty); throws ConfigError naming the key unless it is
// two numbers, low <= high.
std::optional<std::pair<double, double>> reward_clip_bounds(const RlooOptions& options);

}  // namespace st

// An online run's reward functions (<section>.reward_funcs: grpo.reward_funcs, rloo.reward_funcs) and
// their weights (reward_weights),
// and a generation's rewards from them: one column per function, NaN where a function gives
// none (TRL's None).
#pragma once

#include <memory>
#include <vector>

#include "train/group_advantages.h"
#include "train/reward_options.h"
#include "train/rollout_options.h"
#include "train/reward_functions.h"

namespace st {

struct RewardSet {
  std::vector<std::unique_ptr<RewardFunction>> functions;
  std::vector<double> weights;  // one per function
  bool reads_text = false;      // a function reads the completions' text (they must be decoded)
};

// `model` (reward.model's, or null), the rules of reward_funcs, then the program of
// reward.command when given (started here): TRL's order. Throws ConfigError naming
// reward_funcs or reward_weights (in options.section): an unknown word (with the words there are), no
// function at all, or weights that are not one number per function.
RewardSet reward_set(const RolloutOptions& options, const RewardOptions& reward = {},
                     std::unique_ptr<RewardFunction> model = nullptr);

// Every function's rewards of `batch`; throws RewardError naming the function when it answers
// another count than the batch's completions.
RewardTable score_batch(const RewardSet& set, const RewardBatch& batch);

}  // namespace st

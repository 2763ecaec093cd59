#include "train/reward_set.h"

#include "train/reward_program.h"
#include "util/errors.h"
#include "util/text.h"

namespace st {
RewardSet reward_set(const RolloutOptions& options, const RewardOptions& reward, std::unique_ptr<RewardFunction> model) {
  RuleRewardOptions rule_options;
  rule_options.think_prefilled = options.think_prefilled;
  rule_options.overlong_max_length = options.overlong_max_length;
  rule_options.overlong_cache = options.overlong_cache;
  rule_options.answer_column = options.answer_column;
  rule_options.answer_column_key = options.key("answer_column");
  RewardSet set;
  if (model) {
    set.functions.push_back(std::move(model));
    set.reads_text = true;
  }
  for (const std::string& word : comma_items(options.reward_funcs)) {
    RuleReward rule{};
    if (!find_enum(word, rule)) {
      throw ConfigError(options.key("reward_funcs") + ": no reward function '" + word + "'; the rule rewards are " +
                        enum_choices<RuleReward>());
    }
    set.functions.push_back(rule_reward(rule, rule_options));
    set.reads_text = set.reads_text || rule != RuleReward::get_soft_overlong_punishment;
  }
  if (!reward.command.empty()) set.functions.push_back(std::make_unique<RewardProgram>(reward));
  if (set.functions.empty()) {
    throw ConfigError(options.key("reward_funcs") + " is empty and neither reward.model nor reward.command is given: name at "
                      "least one reward function (" + enum_choices<RuleReward>() + "), a reward model or your program");
  }
  const std::vector<std::string> weights = comma_items(options.reward_weights);
  for (const std::string& weight : weights) {
    const std::optional<double> value = whole_number(weight);
    if (!value) throw ConfigError(options.key("reward_weights") + ": '" + weight + "' is not a number");
    set.weights.push_back(*value);
  }
  if (weights.empty()) set.weights.assign(set.functions.size(), 1.0);
  if (set.weights.size() != set.functions.size()) {
    throw ConfigError(options.key("reward_weights") + " lists " + std::to_string(set.weights.size()) + " weights for " +
                      std::to_string(set.functions.size()) +
                      " reward functions (reward.model, " + options.key("reward_funcs") + ", then reward.command); give one each");
  }
  return set;
}

RewardTable score_batch(const RewardSet& set, const RewardBatch& batch) {
  RewardTable table;
  table.functions = set.functions.size();
  table.values.assign(batch.size() * table.functions, 0.0);
  for (size_t f = 0; f < set.functions.size(); ++f) {
    const std::vector<double> rewards = set.functions[f]->rewards(batch);
    if (rewards.size() != batch.size()) {
      throw RewardError("reward " + set.functions[f]->name() + " gave " + std::to_string(rewards.size()) +
                        " rewards for " + std::to_string(batch.size()) + " completions");
    }
    for (size_t i = 0; i < rewards.size(); ++i) table.values[i * table.functions + f] = rewards[i];
  }
  return table;
}

}  // namespace st

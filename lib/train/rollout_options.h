// What an online objective's rollout phase reads (rollout_phase.h): the completions' number and
// sampling, the generation's geometry, the replay file and the rule rewards. Each online
// objective's section holds one (grpo.temperature, rloo.temperature, ...) under TRL's names,
// with that trainer's defaults, as TRL's GRPOConfig and RLOOConfig each carry them; bind() adds
// the keys to the section being declared.
#pragma once

#include <cstdint>
#include <string>

#include "config/config_schema.h"

namespace st {

struct RolloutOptions {
  RolloutOptions(const char* section, int64_t generations, int64_t completion_length)
      : section(section), num_generations(generations), max_completion_length(completion_length) {}

  const char* section;  // the objective's section, which messages name the keys by
  int64_t num_generations;  // completions per prompt (a group)
  int64_t steps_per_generation = 0;  // micro-batches per generation and rank; 0: train.grad_accum
  int64_t num_iterations = 1;
  bool mask_truncated_completions = false;
  double temperature = 1.0;  // sampling's, and the log-probs' (logits over it)
  double top_p = 1.0;
  int64_t top_k = 0;         // 0: every token
  double min_p = 0.0;        // 0: none (TRL's None)
  int64_t max_completion_length;
  std::string rollouts;          // a replay file; empty: sampled on the training ranks
  bool log_completions = false;  // train.output_dir/completions.jsonl
  std::string reward_funcs;      // "think_format_reward, math_answer"
  std::string reward_weights;    // "1.0, 0.5"; empty: 1 each
  // The rules' settings (reward_functions.h: RuleRewardOptions).
  bool think_prefilled = false;
  int64_t overlong_max_length = 1280;
  int64_t overlong_cache = 256;
  std::string answer_column = "solution";

  // "grpo.reward_funcs": a key's full name, for messages.
  std::string key(const char* name) const { return std::string(section) + "." + name; }

  void bind(ConfigSchema& schema) {
    schema.add(&num_generations, "num_generations", "completions sampled per prompt (a group)", at_least(2));
    schema.add(&steps_per_generation, "steps_per_generation",
               "micro-batches of each rank one generation feeds", at_least(0).meaning("0 = train.grad_accum"));
    schema.add(&num_iterations, "num_iterations", "updates on each generation", at_least(1));
    schema.add(&mask_truncated_completions, "mask_truncated_completions",
               "completions that end with neither EOS nor pad carry no loss");
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
    schema.add(&max_completion_length, "max_completion_length", "tokens a completion may have",
               at_least(1).unit("tokens"));
    schema.add(&rollouts, "rollouts",
               "a replay file: line i holds {\"completion_ids\": [[...], ...]}, the num_generations completions of "
               "dataset row i, used as given; empty: completions are sampled on the training ranks");
    schema.add(&log_completions, "log_completions",
               "every completion, its rewards and advantage, one JSON line each in train.output_dir/completions.jsonl");
    schema.add(&reward_funcs, "reward_funcs", "the rule rewards, by TRL's registry words and math_answer",
               any_value().lists("reward functions", "think_format_reward, math_answer"));
    schema.add(&reward_weights, "reward_weights",
               "one weight per reward function (reward.model, reward_funcs, reward.command; empty: 1 each)",
               any_value().lists("weights", "1.0, 0.5"));
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

// Reward functions of the online objectives, behind one interface: what TRL hands a reward
// function (the prompts, the completions as text and as ids, every other dataset column), and a
// reward per completion back (NaN where the function gives none: TRL's None). The rules here
// are TRL's registry words (`reward_funcs`), plus math_answer; a reward model and the user's
// program (reward.command) are other implementations of the same interface.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/enum_names.h"

namespace st {

// One generation's completions on this rank, as a reward function sees them (TRL's arguments):
// the prompt of each completion (repeated once per completion), the completion's text (decoded,
// special tokens skipped), its ids as sampled, and the dataset's other columns, one value per
// completion each: {"solution": [...], ...}.
struct RewardBatch {
  std::vector<std::string> prompts;
  nlohmann::json prompt_values = nlohmann::json::array();  // the records' `prompt` values as they are
  std::vector<std::string> completions;
  bool decoded = false;  // completions hold text (the model has a tokenizer)
  std::vector<std::vector<int64_t>> completion_ids;
  nlohmann::json columns = nlohmann::json::object();
  std::vector<uint64_t> rows;  // each completion's dataset row (for messages)

  size_t size() const { return completions.size(); }
};

class RewardFunction {
 public:
  virtual ~RewardFunction() = default;
  // The name TRL logs it under (rewards/<name>/mean).
  virtual std::string name() const = 0;
  // One reward per completion, NaN for none; throws RewardError naming the completion.
  virtual std::vector<double> rewards(const RewardBatch& batch) const = 0;
};

// A rule: TRL's registry words (trl/scripts/grpo.py) and shardtune's math_answer.
//   think_format_reward           1 when the completion is "<think>...</think>..." with one <think>
//   get_soft_overlong_punishment  DAPO's length penalty on completion_ids (0, a ramp, then -1)
//   math_answer                   1 when the final answer equals the `answer_column` value (math_answer.h)
enum class RuleReward { think_format_reward, get_soft_overlong_punishment, math_answer };
template <>
struct EnumNames<RuleReward> {
  static constexpr NamedValue<RuleReward> table[] = {
      {RuleReward::think_format_reward, "think_format_reward"},
      {RuleReward::get_soft_overlong_punishment, "get_soft_overlong_punishment"},
      {RuleReward::math_answer, "math_answer"}};
};

struct RuleRewardOptions {
  // The chat template ends the prompt inside "<think>" (Qwen3's thinking mode, DeepSeek-R1's):
  // the completion is read as if it began with it (TRL's rule would give 0 to every completion).
  bool think_prefilled = false;
  int64_t overlong_max_length = 1280;  // TRL's registry values (max_completion_len, soft_punish_cache)
  int64_t overlong_cache = 256;
  std::string answer_column = "solution";  // TRL's accuracy_reward reads `solution`
  std::string answer_column_key = "grpo.answer_column";  // the key that names it, for messages
};

std::unique_ptr<RewardFunction> rule_reward(RuleReward rule, const RuleRewardOptions& options);

// TRL's think_format_reward on one text: ^<think>(?!.*<think>)(.*?)</think>.*$ (DOTALL).
bool think_format_matches(const std::string& text);
// DAPO's soft overlong punishment of a completion of `length` tokens.
double soft_overlong_punishment(int64_t length, int64_t max_length, int64_t cache);

}  // namespace st

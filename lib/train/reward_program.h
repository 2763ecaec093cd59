// The user's reward program (reward.command), one more reward function after grpo.reward_funcs.
// Started once per rank; per generation it reads one JSON line holding its rank's completions as
// TRL hands a reward function its arguments:
//   {"prompts": [...], "completions": [...], "completion_ids": [[...], ...], "<column>": [...], ...}
// prompts repeated once per completion (text, or messages as the dataset holds them), each
// completion decoded with special tokens skipped (for messages: [{"role": "assistant",
// "content": text}]; absent when the model has no tokenizer), the ids as sampled (EOS included),
// and every dataset column but `prompt`, one value per completion. It answers one line
// {"rewards": [number or null, ...]}, one per completion (null: none, TRL's None). A program that
// exits, times out (reward.timeout_s), answers another count or a value that is not a number
// stops the run with a RewardError naming the program and the completion.
#pragma once

#include <memory>

#include "train/reward_functions.h"
#include "train/reward_options.h"
#include "util/line_process.h"

namespace st {

class RewardProgram : public RewardFunction {
 public:
  explicit RewardProgram(const RewardOptions& options);  // starts it
  std::string name() const override { return options_.name; }
  std::vector<double> rewards(const RewardBatch& batch) const override;

  // The request line for `batch` (what the program reads).
  static nlohmann::json request(const RewardBatch& batch);

 private:
  RewardOptions options_;
  std::unique_ptr<LineProcess> process_;  // asking changes its state, not the function's
};

}  // namespace st

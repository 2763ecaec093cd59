// A reward model (reward.model) as one more reward function, before grpo.reward_funcs (TRL's
// order: reward_model_name_or_path, then reward_funcs). Read as TRL 1.16's GRPOTrainer reads
// it: a *ForSequenceClassification with one label, its own tokenizer; each completion's text is
// the prompt's text followed by the completion's (text prompts), or the reward tokenizer's chat
// template over the prompt's messages and the completion as the assistant's reply (conversational
// prompts; prep.template_kwargs passed as TRL passes chat_template_kwargs), tokenized without
// special tokens, right-padded with the tokenizer's pad token (its EOS where it has none, which
// then becomes the model's pad_token_id), and scored at its last token that is not padding.
// Frozen and sharded over the run's shard group like the policy, in the compute dtype; no
// master, gradient or optimizer state.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "fsdp/fsdp_model.h"
#include "tokenizer/jinja_chat.h"
#include "tokenizer/tokenizer.h"
#include "train/reward_functions.h"

namespace st {

class RewardModel : public RewardFunction {
 public:
  // `path`: reward.model. `policy` gives the groups and the options (compute dtype, device) the
  // frozen copy takes; `rows` the sequences per forward; `template_kwargs` a JSON object (or "").
  // Throws ConfigError / ModelError / TokenizerError naming reward.model: no such directory (a
  // hub id with its download command), a causal LM, no tokenizer or no pad/EOS token, a
  // vocabulary past the model's.
  RewardModel(const std::string& path, FsdpModel& policy, int64_t rows, const std::string& template_kwargs);
  ~RewardModel() override;

  // TRL's name: the directory's last component.
  std::string name() const override { return name_; }
  // Collective over the shard group: every rank must score a batch of the same size (the rollout
  // geometry gives each the same number of completions), in forwards of `rows` sequences.
  std::vector<double> rewards(const RewardBatch& batch) const override;

 private:
  // What the model reads for completion i of `batch` (before tokenization).
  std::string text_of(const RewardBatch& batch, size_t i) const;

  std::string path_, name_;
  int64_t rows_;
  Tokenizer tokenizer_;
  std::optional<JinjaChat> chat_;  // the tokenizer's chat template, when it has one
  int64_t pad_id_ = 0;
  std::unique_ptr<FsdpModel> model_;  // scoring changes its gathered state, not the function's
};

}  // namespace st

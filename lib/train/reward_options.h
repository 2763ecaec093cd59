// [reward]: the rewards an online objective (grpo) takes beyond its rule words: a reward model
// (reward_model.h) and the user's program (reward_program.h). Declared once: the struct and, in
// bind(), its keys.
#pragma once

#include <string>

#include "config/config_schema.h"

namespace st {

struct RewardOptions {
  std::string model;    // empty: no reward model
  std::string command;  // empty: no program
  std::string name = "reward_program";
  double timeout_s = 600.0;

  void bind(ConfigSchema& schema) {
    schema.section("reward", "the online objectives' reward model and reward program (docs/grpo.md, \"Rewards\")");
    schema.add(&model, "model",
               "a reward model's directory (a Hugging Face *ForSequenceClassification with num_labels 1, or the "
               "export of a train.stage = rm run) with its tokenizer: frozen, sharded, it scores prompt + completion "
               "as TRL does; weighted before grpo.reward_funcs (TRL's reward_model_name_or_path)");
    schema.add(&command, "command",
               "started once per rank (/bin/sh -c); per generation it reads one JSON line (prompts, completions, "
               "completion_ids, the dataset's other columns) and answers {\"rewards\": [number or null, ...]}; "
               "weighted after grpo.reward_funcs");
    schema.add(&name, "name", "what the program's rewards are logged as (rewards/<name>/mean)");
    schema.add(&timeout_s, "timeout_s", "longest wait for one answer; past it the program is killed and the run stops",
               above(0).unit("s"));
  }
};

}  // namespace st

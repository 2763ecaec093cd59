// The objectives: train.stage's words, and the config sections the objectives own. A new
// objective adds its word here and its section (an options struct with its keys in bind(), in
// its own <name>_options.h) as a member of ObjectiveSections; the config, --help and the docs
// follow. Its loss is a class in <name>_objective.cpp, registered in objective.cpp.
#pragma once

#include "train/dpo_options.h"
#include "train/grpo_options.h"
#include "train/kto_options.h"
#include "train/reward_options.h"
#include "train/rloo_options.h"
#include "train/rm_options.h"
#include "util/enum_names.h"

namespace st {

// train.stage: the objective.
enum class Stage { sft, dpo, kto, rm, grpo, rloo };
template <>
struct EnumNames<Stage> {
  static constexpr NamedValue<Stage> table[] = {
      {Stage::dpo, "dpo"}, {Stage::sft, "sft"}, {Stage::kto, "kto"}, {Stage::rm, "rm"},
      {Stage::grpo, "grpo"}, {Stage::rloo, "rloo"}};
};
constexpr Stage kDefaultStage = Stage::dpo;  // train.stage's default

// The objectives' own sections, one member each (TrainConfig holds them: config.dpo, config.kto, ..).
struct ObjectiveSections {
  DpoOptions dpo;
  KtoOptions kto;
  RmOptions rm;
  GrpoOptions grpo;
  RlooOptions rloo;
  RewardOptions reward;  // the online objectives'

  void bind_objective_sections(ConfigSchema& schema) {
    dpo.bind(schema);
    kto.bind(schema);
    rm.bind(schema);
    grpo.bind(schema);
    rloo.bind(schema);
    reward.bind(schema);
  }
};

}  // namespace st

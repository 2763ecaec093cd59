// [rm]: the reward model's section (train.stage = rm), TRL's RewardConfig names and defaults,
// declared once: the struct and, in bind(), its keys' help and ranges.
#pragma once

#include "config/config_schema.h"

namespace st {

struct RmOptions {
  double center_rewards_coefficient = 0.0;  // 0: off (TRL's None)

  void bind(ConfigSchema& schema) {
    schema.section("rm", "reward model, a Bradley-Terry score head on the preference pairs (train.stage = rm; "
                         "docs/objectives.md)");
    schema.add(&center_rewards_coefficient, "center_rewards_coefficient",
               "weight of the (r_chosen + r_rejected)^2 term that centres the rewards on 0 (Eisenstein et al. "
               "2023); 0 = off",
               at_least(0));
  }
};

}  // namespace st

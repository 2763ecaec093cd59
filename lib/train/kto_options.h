// [kto]: KTO's section (train.stage = kto), TRL's KTOConfig names and defaults, declared once:
// the struct and, in bind(), its keys' help and ranges.
#pragma once

#include "config/config_schema.h"

namespace st {

struct KtoOptions {
  double beta = 0.1;                // inverse temperature of the implicit reward
  double desirable_weight = 1.0;    // a desirable completion's loss weight
  double undesirable_weight = 1.0;  // an undesirable completion's loss weight

  void bind(ConfigSchema& schema) {
    schema.section("kto", "KTO, unpaired desirable / undesirable completions (train.stage = kto; docs/objectives.md)");
    schema.add(&beta, "beta", "inverse temperature of the implicit reward", above(0));
    schema.add(&desirable_weight, "desirable_weight", "weight of a desirable completion's loss", above(0));
    schema.add(&undesirable_weight, "undesirable_weight", "weight of an undesirable completion's loss", above(0));
  }
};

}  // namespace st

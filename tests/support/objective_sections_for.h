// The objectives' config sections a test hands Objective::micro_batch_loss: defaults with the
// [dpo] loss and beta it names.
#pragma once

#include "train/objective_list.h"

namespace st::testing {

inline ObjectiveSections dpo_sections(PreferenceLoss loss, double beta = 0.1) {
  ObjectiveSections sections;
  sections.dpo.loss = loss;
  sections.dpo.beta = beta;
  return sections;
}

}  // namespace st::testing

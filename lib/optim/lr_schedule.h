// Learning rate per optimizer step, as transformers' schedulers compute it (get_*_schedule_
// with_warmup): linear warmup from 0, then constant / linear decay to 0 / half-cosine to 0 /
// half-cosine to min_lr_ratio x lr.
#pragma once

#include <cstdint>

#include "optim/optim_options.h"

namespace st {

// Warmup length in steps from warmup_steps or warmup_ratio x total_steps (rounded up, as HF).
int64_t warmup_steps_of(const OptimOptions& options, int64_t total_steps);

// The rate for step `step` (0-based: the step about to be taken) of `total_steps`.
double learning_rate(const OptimOptions& options, int64_t step, int64_t total_steps);

}  // namespace st

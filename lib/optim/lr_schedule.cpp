#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace st {

int64_t warmup_steps_of(const OptimOptions& options, int64_t total_steps) {
  if (options.warmup_steps > 0) return options.warmup_steps;
  return static_cast<int64_t>(std::ceil(options.warmup_ratio * static_cast<double>(total_steps)));
}

double learning_rate(const OptimOptions& options, int64_t step, int64_t total_steps) {
  const int64_t warmup = warmup_steps_of(options, total_steps);
  if (step < warmup) return options.lr * static_cast<double>(step) / std::max<int64_t>(1, warmup);
  const double progress = static_cast<double>(step - warmup) /
                          static_cast<double>(std::max<int64_t>(1, total_steps - warmup));
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
  switch (options.schedule) {
    case LrSchedule::constant: return options.lr;
    case LrSchedule::linear:
      return options.lr * std::max(0.0, static_cast<double>(total_steps - step) /
                                            std::max<int64_t>(1, total_steps - warmup));
    case LrSchedule::cosine: return options.lr * std::max(0.0, cosine);
    case LrSchedule::cosine_with_min_lr:
      return options.lr * (options.min_lr_ratio + (1.0 - options.min_lr_ratio) * std::max(0.0, cosine));
  }
  return options.lr;
}

}  // namespace st

// Learning-rate schedules at the points transformers' schedulers define.
#include <gtest/gtest.h>

#include "optim/lr_schedule.h"
#include "util/errors.h"

namespace st {
namespace {

OptimOptions schedule(const std::string& name) {
  OptimOptions options;
  options.lr = 1.0;
  options.schedule = parse_enum<LrSchedule>(name, "optim.schedule");
  options.warmup_steps = 2;
  options.min_lr_ratio = 0.1;
  return options;
}

TEST(LrSchedule, WarmupThenDecayAsTransformers) {
  for (const char* name : {"constant", "linear", "cosine", "cosine_with_min_lr"}) {
    EXPECT_DOUBLE_EQ(learning_rate(schedule(name), 0, 10), 0.0) << name;
    EXPECT_DOUBLE_EQ(learning_rate(schedule(name), 1, 10), 0.5) << name;
    EXPECT_DOUBLE_EQ(learning_rate(schedule(name), 2, 10), 1.0) << name;
  }
  EXPECT_DOUBLE_EQ(learning_rate(schedule("constant"), 9, 10), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate(schedule("linear"), 6, 10), 0.5);
  EXPECT_NEAR(learning_rate(schedule("cosine"), 6, 10), 0.5, 1e-15);
  EXPECT_NEAR(learning_rate(schedule("cosine"), 10, 10), 0.0, 1e-15);
  EXPECT_NEAR(learning_rate(schedule("cosine_with_min_lr"), 6, 10), 0.55, 1e-15);
  EXPECT_NEAR(learning_rate(schedule("cosine_with_min_lr"), 10, 10), 0.1, 1e-15);
}

TEST(LrSchedule, WarmupRatioRoundsUpAndUnknownNamesAreRefused) {
  OptimOptions options = schedule("linear");
  options.warmup_steps = 0;
  options.warmup_ratio = 0.1;
  EXPECT_EQ(warmup_steps_of(options, 15), 2);
  EXPECT_THROW(schedule("polynomial"), ConfigError);
}

}  // namespace
}  // namespace st

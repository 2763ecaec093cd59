// Dynamic loss scaling: hysteresis before backing off, halving down to the minimum, growth
// after a window of clean steps (which restores the hysteresis), skipped-step count.
#include <gtest/gtest.h>

#include "optim/loss_scaler.h"

namespace st {
namespace {

TEST(DynamicLossScaler, StartsAtTwoToTheSixteen) {
  const DynamicLossScaler scaler;
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_EQ(scaler.skipped_steps(), 0);
}

TEST(DynamicLossScaler, HysteresisDelaysTheBackOff) {
  DynamicLossScaler scaler;  // hysteresis 2
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 65536.0);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 32768.0);
  scaler.update(true);  // hysteresis spent: every further overflow halves
  EXPECT_EQ(scaler.scale(), 16384.0);
  EXPECT_EQ(scaler.skipped_steps(), 3);
}

TEST(DynamicLossScaler, NeverGoesBelowTheMinimum) {
  DynamicLossScaler scaler({4.0, 1000, 1, 1.0});
  for (int i = 0; i < 10; ++i) scaler.update(true);
  EXPECT_EQ(scaler.scale(), 1.0);
  EXPECT_EQ(scaler.skipped_steps(), 10);
}

TEST(DynamicLossScaler, GrowsAfterAWindowOfCleanStepsAndRestoresHysteresis) {
  DynamicLossScaler scaler({1024.0, 3, 2, 1.0});
  scaler.update(true);  // spends one hysteresis
  scaler.update(false);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 1024.0) << "an overflow restarts the window";
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 2048.0);
  scaler.update(true);  // hysteresis restored to 2: no back-off yet
  EXPECT_EQ(scaler.scale(), 2048.0);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 1024.0);
}

}  // namespace
}  // namespace st

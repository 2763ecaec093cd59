// The monotonic timer measures elapsed wall time and resets.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "util/duration_text.h"
#include "util/timer.h"

namespace st {
namespace {

TEST(Timer, MeasuresElapsedTimeAndResets) {
  Timer timer;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const double elapsed = timer.seconds();
  EXPECT_GE(elapsed, 0.05);
  EXPECT_LT(elapsed, 5.0);
  EXPECT_NEAR(timer.milliseconds(), timer.seconds() * 1e3, 5.0);
  timer.reset();
  EXPECT_LT(timer.seconds(), elapsed);
}

TEST(DurationText, TwoLargestUnitsRoundedDown) {
  EXPECT_EQ(duration_text(0), "0s");
  EXPECT_EQ(duration_text(42.9), "42s");
  EXPECT_EQ(duration_text(185), "3m05s");
  EXPECT_EQ(duration_text(4 * 3600 + 12 * 60 + 59), "4h12m");
  EXPECT_EQ(duration_text(14400.0), "4h00m");
  EXPECT_EQ(duration_text(2 * 86400 + 3 * 3600 + 1), "2d03h");
  EXPECT_EQ(duration_text(-1), "?");
  EXPECT_EQ(duration_text(std::nan("")), "?");
}

}  // namespace
}  // namespace st

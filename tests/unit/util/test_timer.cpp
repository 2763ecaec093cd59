// The monotonic timer measures elapsed wall time and resets.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

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

}  // namespace
}  // namespace st

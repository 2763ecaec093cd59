// Watchdog bookkeeping and expiry (the multi-rank abort is in tests/mpi).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "distributed/watchdog.h"

namespace st {
namespace {

TEST(Watchdog, ArmAndDisarmTrackTickets) {
  Watchdog watchdog(60.0);
  const auto first = watchdog.arm("all_reduce(sum, Float x 4)");
  const auto second = watchdog.arm("barrier()");
  EXPECT_NE(first, second);
  EXPECT_EQ(watchdog.armed_count(), 2u);
  watchdog.disarm(first);
  watchdog.disarm(second);
  EXPECT_EQ(watchdog.armed_count(), 0u);
}

TEST(Watchdog, PolledTicketsRetireWhenComplete) {
  Watchdog watchdog(0.5);
  std::atomic<bool> done{false};
  watchdog.arm("nccl all_gather", [&done] { return done.load(); });
  done = true;
  for (int i = 0; i < 100 && watchdog.armed_count() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(watchdog.armed_count(), 0u);
}

TEST(Watchdog, ContextIsScopedAndRestored) {
  EXPECT_EQ(current_collective_context().unit, -1);
  {
    ScopedCollectiveContext outer(12, 3);
    EXPECT_EQ(current_collective_context().step, 12);
    EXPECT_EQ(current_collective_context().unit, 3);
    {
      ScopedCollectiveContext inner(12, 4);
      EXPECT_EQ(current_collective_context().unit, 4);
    }
    EXPECT_EQ(current_collective_context().unit, 3);
  }
  EXPECT_EQ(current_collective_context().step, -1);
}

TEST(WatchdogDeathTest, ExpiredTicketAbortsWithOperationUnitAndStep) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Watchdog watchdog(0.2);
        ScopedCollectiveContext context(7, 2);
        watchdog.arm("reduce_scatter(avg, Float x 1000)");
        std::this_thread::sleep_for(std::chrono::seconds(10));
      },
      ::testing::ExitedWithCode(134),
      "reduce_scatter\\(avg, Float x 1000\\) on unit 2 step 7 timed out after 0\\.[0-9]+ s "
      "\\(dist.timeout_s = 0.2\\)");
}

}  // namespace
}  // namespace st

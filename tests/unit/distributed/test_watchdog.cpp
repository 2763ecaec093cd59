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

// A communicator going away drops its tickets: none of its polls runs afterwards, and a ticket
// past its deadline no longer aborts. Another owner's ticket stays.
TEST(Watchdog, DisarmAllDropsOneOwnersTicketsAndTheirPolls) {
  Watchdog watchdog(0.1);
  const int owner = 0, other = 0;
  std::atomic<int> polls_after{0};
  std::atomic<bool> disarmed{false};
  for (int i = 0; i < 3; ++i) {
    watchdog.arm("nccl reduce_scatter", [&] {
      if (disarmed.load()) ++polls_after;
      return false;
    }, &owner);
  }
  const auto kept = watchdog.arm("nccl all_gather", [] { return false; }, &other);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the thread polls them meanwhile
  watchdog.disarm_all(&owner);
  disarmed = true;
  EXPECT_EQ(watchdog.armed_count(), 1u);
  watchdog.disarm(kept);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // 3x the deadline: no abort
  EXPECT_EQ(polls_after.load(), 0);
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

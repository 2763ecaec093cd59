// Rank-aware logging: prefixes, rank-0-only lines, stderr for warnings.
#include <gtest/gtest.h>

#include "util/log.h"

namespace st {
namespace {

class LogTest : public ::testing::Test {
 protected:
  void TearDown() override { set_log_identity(-1, -1, ""); }
};

TEST_F(LogTest, PrefixBeforeIdentityIsKnown) {
  set_log_identity(-1, -1, "");
  EXPECT_EQ(log_prefix().rfind("[r?/? ", 0), 0u) << log_prefix();
}

TEST_F(LogTest, PrefixCarriesRankSizeAndHost) {
  set_log_identity(3, 16, "gpu-node-12");
  EXPECT_EQ(log_prefix(), "[r3/16 gpu-node-12]");
}

TEST_F(LogTest, Log0PrintsOnlyOnRankZero) {
  set_log_identity(0, 2, "a");
  ::testing::internal::CaptureStdout();
  log0("loss ", 1.5, " step ", 3);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "[r0/2 a] loss 1.5 step 3\n");

  set_log_identity(1, 2, "b");
  ::testing::internal::CaptureStdout();
  log0("hidden");
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
}

TEST_F(LogTest, LogAllPrintsOnEveryRank) {
  set_log_identity(5, 8, "c");
  ::testing::internal::CaptureStdout();
  log_all("ready");
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "[r5/8 c] ready\n");
}

TEST_F(LogTest, WarningsGoToStderr) {
  set_log_identity(1, 2, "d");
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  warn_all("disk ", "full");
  warn0("only rank 0");
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "[r1/2 d] disk full\n");
}

}  // namespace
}  // namespace st

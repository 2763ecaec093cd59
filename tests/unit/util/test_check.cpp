// The check-macro family: message format (call, file, line, rank, host), abort on MPI/assert
// failures, IoError with HDF5's own diagnosis.
#include <gtest/gtest.h>
#include <hdf5.h>

#include "util/check.h"
#include "util/log.h"

namespace st {
namespace {

int failing_mpi_call() { return MPI_ERR_COUNT; }
int succeeding_mpi_call() { return MPI_SUCCESS; }

// Rank and host come from the log prefix of whoever prints the text, once.
TEST(CheckMacros, FailureDescriptionNamesCallFileAndLine) {
  const std::string text = describe_check_failure("MPI_Allreduce(x)", "/src/shardtune/lib/distributed/a.cpp",
                                                  42, "MPI_ERR_TRUNCATE: message truncated");
  EXPECT_EQ(text, "MPI_Allreduce(x) failed at lib/distributed/a.cpp:42: MPI_ERR_TRUNCATE: message truncated");
}

TEST(CheckMacrosDeathTest, AbortNamesRankAndHostOnce) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  set_log_identity(3, 16, "node07");
  EXPECT_EXIT(ST_CHECK_MPI(failing_mpi_call()), ::testing::ExitedWithCode(134),
              "(^|\n)\\[r3/16 node07\\] failing_mpi_call\\(\\) failed at");
  set_log_identity(-1, -1, "");
}

TEST(CheckMacros, SuccessfulCallsPassThrough) {
  ST_CHECK_MPI(succeeding_mpi_call());
  EXPECT_EQ(ST_CHECK_HDF5(H5open()), 0);
}

TEST(CheckMacrosDeathTest, MpiFailureAbortsWithCallAndLocation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(ST_CHECK_MPI(failing_mpi_call()), ::testing::ExitedWithCode(134),
              "failing_mpi_call\\(\\) failed at tests/unit/util/test_check.cpp:[0-9]+: MPI error code");
}

TEST(CheckMacrosDeathTest, MpiFailureCarriesWhatTheFailureContextSays) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  set_mpi_failure_context([] { return std::string(" (step 7); rank 3 on h2 stopped answering"); });
  EXPECT_EXIT(ST_CHECK_MPI(failing_mpi_call()), ::testing::ExitedWithCode(134),
              "failing_mpi_call\\(\\) failed at tests/unit/util/test_check.cpp:[0-9]+: MPI error code [0-9]+ "
              "\\(step 7\\); rank 3 on h2 stopped answering");
  set_mpi_failure_context({});
}

TEST(CheckMacrosDeathTest, AssertAbortsWithConditionAndMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const int shards = 3;
  EXPECT_EXIT(ST_ASSERT(shards == 4, "geometry broken"), ::testing::ExitedWithCode(134),
              "shards == 4 failed at tests/unit/util/test_check.cpp:[0-9]+: geometry broken");
}

TEST(CheckMacros, Hdf5FailureThrowsIoErrorWithHdf5Diagnosis) {
  silence_hdf5_error_printing();
  try {
    ST_CHECK_HDF5(H5Fopen("/nonexistent/shard.h5", H5F_ACC_RDONLY, H5P_DEFAULT));
    FAIL() << "expected IoError";
  } catch (const IoError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("H5Fopen(\"/nonexistent/shard.h5\""), std::string::npos) << message;
    EXPECT_NE(message.find("tests/unit/util/test_check.cpp:"), std::string::npos) << message;
    EXPECT_NE(message.find("unable to open file"), std::string::npos) << message;
  }
}

TEST(CheckMacros, MpiErrorCodeIsReportedBeforeMpiInit) {
  // The readable text needs MPI initialized; tests/mpi checks that form.
  EXPECT_EQ(mpi_error_string(MPI_ERR_COUNT), "MPI error code " + std::to_string(MPI_ERR_COUNT));
}

}  // namespace
}  // namespace st

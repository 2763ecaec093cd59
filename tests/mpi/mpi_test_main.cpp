// main() for MPI GoogleTest binaries: one World per process, full output from rank 0 and
// failures from every rank, a result agreed by all ranks, and a watchdog deadline so a broken
// test aborts the job instead of hanging it.
#include <gtest/gtest.h>

#include <strings.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "mpi_test_main.h"
#include "util/build_info.h"
#include "util/check.h"
#include "util/log.h"

namespace st::testing {
namespace {

World* the_world = nullptr;
std::unique_ptr<MpiCommunicator> the_communicator;

// Prints failed assertions of ranks other than 0, whose normal output is silenced. The test's
// name is kept from OnTestStart: asking UnitTest for it while a result is being reported
// deadlocks on gtest's own mutex (a failing rank then hung until the watchdog).
class FailurePrinter : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo& info) override {
    test_name_ = std::string(info.test_suite_name()) + "." + info.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    warn_all(test_name_, " failed at ", result.file_name() ? result.file_name() : "?", ":",
             result.line_number(), ": ", result.summary());
  }
  std::string test_name_;
};

// A run under OPENBLAS_CORETYPE (the bit-identity tests' second run) must get that core on
// this rank, or it would only repeat the first run.
bool blas_core_as_asked() {
  const char* asked = std::getenv("OPENBLAS_CORETYPE");
  const std::string core = blas_core();
  if (!asked || !*asked || core.empty() || strcasecmp(core.c_str(), asked) == 0) return true;
  warn_all("OPENBLAS_CORETYPE=", asked, " but the BLAS runs ", blas_version());
  return false;
}

}  // namespace

World& test_world() { return *the_world; }

MpiCommunicator& world_communicator() {
  if (!the_communicator) {
    the_communicator = std::make_unique<MpiCommunicator>(the_world->comm(), the_world->watchdog());
  }
  return *the_communicator;
}

}  // namespace st::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  st::World world(argc, argv, /*collective_timeout_s=*/120.0);
  st::testing::the_world = &world;
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (world.rank() != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new st::testing::FailurePrinter);
  }
  int failed = RUN_ALL_TESTS() != 0 || !st::testing::blas_core_as_asked() ? 1 : 0;
  ST_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  st::testing::the_communicator.reset();
  return failed;
}

// Abort scenario: the last rank reports a different libtorch. The startup consistency check
// must abort every rank and name the odd rank and both values.
#include "distributed/env_check.h"
#include "distributed/mpi_communicator.h"
#include "distributed/world.h"

int main(int argc, char** argv) {
  st::World world(argc, argv, /*collective_timeout_s=*/30.0);
  st::MpiCommunicator communicator(world.comm(), world.watchdog());
  st::EnvFingerprint mine = st::local_env_fingerprint(world);
  if (world.rank() == world.size() - 1) {
    for (auto& field : mine) {
      if (field.key == "libtorch") field.value = "injected-for-test";
    }
  }
  st::enforce_consistent_env(communicator, mine);
  return 0;  // not reached: the check aborts
}

// Abort scenario: the last rank skips an all_reduce the others enter. With dist.timeout_s = 3
// the waiting ranks' watchdog must log the collective, unit and step, and abort the whole job
// (the skipping rank included) — run by expect_abort.sh, which checks the time and message.
// `watchdog_abort sleep`: the last rank is alive outside any collective; `watchdog_abort stop`:
// it is frozen (SIGSTOP, as a dead or cut-off host). Either way the roll call names it, and
// only it: the others answer from inside the collective they wait in.
// `watchdog_abort fail`: rank 0 does not hang but fails an MPI call (as a send to a dead peer
// fails), with the others in the collective and the last rank asleep outside it: the failure's
// report names the step and, from the roll call, the last rank.
// `watchdog_abort startup`: the last rank hangs before MPI_Init (as one that crashed inside it
// leaves the others): the others' start-up deadline (SHARDTUNE_STARTUP_TIMEOUT_S) ends them.
#include <ATen/ATen.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>

#include "distributed/mpi_communicator.h"
#include "distributed/world.h"
#include "util/check.h"

int main(int argc, char** argv) {
  const bool fail = argc > 1 && std::strcmp(argv[1], "fail") == 0;
  if (argc > 1 && std::strcmp(argv[1], "startup") == 0) {
    // Open MPI's launcher names the rank before MPI_Init.
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (rank != nullptr && size != nullptr && std::atoi(rank) == std::atoi(size) - 1) sleep(120);
  }
  // Failing: a deadline long next to the roll call, which must speak before any timeout does.
  st::World world(argc, argv, /*collective_timeout_s=*/fail ? 8.0 : 3.0);
  st::MpiCommunicator communicator(world.comm(), world.watchdog());
  st::ScopedCollectiveContext context(/*step=*/3, /*unit=*/7);
  const at::Tensor values = at::ones({4});
  if (world.rank() == world.size() - 1) {
    if (argc > 1 && std::strcmp(argv[1], "stop") == 0) raise(SIGSTOP);
    sleep(120);  // stuck elsewhere: never joins the collective
  } else if (fail && world.rank() == 0) {
    int value = 0;
    ST_CHECK_MPI(MPI_Send(&value, 1, MPI_INT, /*dest=*/world.size() + 5, /*tag=*/0, world.comm()));
  } else {
    communicator.all_reduce(values, st::ReduceOp::sum);
  }
  return 0;  // not reached when the watchdog works
}

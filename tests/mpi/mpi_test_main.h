// Shared by the MPI GoogleTest binaries: the process's World and a communicator over it.
#pragma once

#include "distributed/mpi_communicator.h"
#include "distributed/world.h"

namespace st::testing {

World& test_world();
MpiCommunicator& world_communicator();

}  // namespace st::testing

// Shared by the MPI GoogleTest binaries: the process's World and a communicator over it.
#pragma once

#include "dist/mpi_communicator.h"
#include "dist/world.h"

namespace st::testing {

World& test_world();
MpiCommunicator& world_communicator();

}  // namespace st::testing

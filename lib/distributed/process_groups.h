// The sub-communicators of hybrid sharding: a shard group (the ranks of one node) and a replica
// group (the ranks with the same local rank on every node). Full sharding uses the world.
#pragma once

#include "distributed/mpi_comm.h"
#include "distributed/world.h"

namespace st {

struct ProcessGroups {
  Topology topology;
  MpiComm shard;    // ranks of this node, ordered by world rank
  MpiComm replica;  // one rank per node, same local rank, ordered by node
};

// Collective over `comm`.
ProcessGroups make_process_groups(MPI_Comm comm, const Topology& topology);

}  // namespace st

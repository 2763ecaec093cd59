// Splits a communicator by node (shard group) and by local rank (replica group).
#include "distributed/process_groups.h"

#include "util/check.h"

namespace st {

ProcessGroups make_process_groups(MPI_Comm comm, const Topology& topology) {
  int rank = 0;
  ST_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  ProcessGroups groups;
  groups.topology = topology;
  groups.shard = MpiComm::split(comm, topology.node_index, rank);
  groups.replica = MpiComm::split(comm, topology.local_rank, topology.node_index);
  return groups;
}

}  // namespace st

// The MPI job as the rest of shardtune sees it: init/finalize, rank and size, which node each
// rank is on, the GPU it should use, and the watchdog all collectives report to.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "distributed/mpi_comm.h"
#include "distributed/roll_call.h"
#include "distributed/singleton_session_dir.h"
#include "distributed/watchdog.h"

namespace st {

// Where ranks sit: nodes are MPI shared-memory domains, or declared (dist.ranks_per_node) to
// test multi-node layouts on one machine. Ranks of a node are consecutive in the declared case.
struct Topology {
  int local_rank = 0;  // index among the ranks of this node
  int local_size = 1;  // ranks on this node
  int node_index = 0;  // 0 .. node_count-1, ordered by the nodes' lowest world rank
  int node_count = 1;
};

class World {
 public:
  // MPI_Init_thread(MPI_THREAD_MULTIPLE): the watchdog thread may call MPI_Abort while the main
  // thread waits in a collective. Collective over MPI_COMM_WORLD.
  World(int& argc, char**& argv, double collective_timeout_s = 1800.0);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& hostname() const { return hostname_; }
  // Host name of every rank, indexed by rank.
  const std::vector<std::string>& hostnames() const { return hostnames_; }
  // Detected from MPI shared-memory domains.
  const Topology& topology() const { return topology_; }
  // The GPU this rank drives: its index among the ranks of its node.
  int local_device() const { return topology_.local_rank; }
  MPI_Comm comm() const { return MPI_COMM_WORLD; }
  Watchdog& watchdog() { return watchdog_; }

 private:
  // First: made before MPI_Init, removed after MPI_Finalize (~World's body).
  SingletonSessionDir session_dir_;
  int rank_ = 0;
  int size_ = 1;
  std::string hostname_;
  std::vector<std::string> hostnames_;
  Topology topology_;
  Watchdog watchdog_;
  std::unique_ptr<RollCall> roll_call_;  // names the ranks that stopped answering on a timeout
};

// Collective over `comm`: node layout from MPI_COMM_TYPE_SHARED.
Topology detect_topology(MPI_Comm comm);
// Pure: the layout when every `ranks_per_node` consecutive ranks are declared one node.
Topology declared_topology(int rank, int size, int ranks_per_node);

}  // namespace st

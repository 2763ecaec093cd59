// World: MPI lifetime, identity for log prefixes, node topology.
#include "distributed/world.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include "distributed/startup_deadline.h"
#include "util/check.h"
#include "util/log.h"

namespace st {
namespace {

std::string current_hostname() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

}  // namespace

World::World(int& argc, char**& argv, double collective_timeout_s)
    : watchdog_(collective_timeout_s) {
  // Until every rank has started and met the others, no collective watchdog runs: a rank that
  // died in MPI_Init would leave the rest waiting there for ever.
  std::optional<StartupDeadline> startup(std::in_place, "MPI start-up (MPI_Init and the host exchange)",
                                         startup_timeout_s());
  // Started without a launcher (a singleton), Open MPI 4 forks and starts an orted to serve
  // MPI_Comm_spawn and name publishing, which shardtune never calls: 0.1 s of wall time and an
  // orted's 0.04 s of CPU for every command run by hand (bench/startup.sh). Under mpirun or srun it has no effect;
  // a value the user set is kept.
  setenv("OMPI_MCA_ess_singleton_isolated", "1", /*overwrite=*/0);
  int provided = MPI_THREAD_SINGLE;
  ST_CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  const bool thread_multiple = provided >= MPI_THREAD_MULTIPLE;
  // Errors come back as codes so ST_CHECK_MPI can report them with rank and host.
  ST_CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  ST_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  ST_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  hostname_ = current_hostname();
  set_log_identity(rank_, size_, hostname_);
  // Fixed-width gather: host names are short, and this runs once before any Communicator.
  constexpr int kWidth = 256;
  std::vector<char> mine(kWidth, '\0');
  hostname_.copy(mine.data(), kWidth - 1);
  std::vector<char> all(static_cast<size_t>(kWidth) * static_cast<size_t>(size_));
  ST_CHECK_MPI(MPI_Allgather(mine.data(), kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR,
                             MPI_COMM_WORLD));
  for (int rank = 0; rank < size_; ++rank) hostnames_.emplace_back(&all[rank * kWidth]);
  silence_hdf5_error_printing();
  topology_ = detect_topology(MPI_COMM_WORLD);
  startup.reset();
  if (!thread_multiple) {
    warn0("MPI provides thread level ", provided,
          " < MPI_THREAD_MULTIPLE: a watchdog abort may wait for the blocked collective");
  } else if (size_ > 1) {
    roll_call_ = std::make_unique<RollCall>(MPI_COMM_WORLD, hostnames_);
    RollCall* roll_call = roll_call_.get();
    watchdog_.set_liveness([roll_call] { roll_call->answer_pings(); },
                           [roll_call](double wait_s) { return roll_call->describe(roll_call->silent_ranks(wait_s)); });
    // A dead peer can make a collective fail on the ranks left instead of hang: that report
    // names the step and who stopped answering too.
    set_mpi_failure_context([this] {
      const std::string where = describe_context(current_collective_context());
      return (where.empty() ? "" : " (" + where + ")") + "; " + watchdog_.liveness_report(/*failed=*/true);
    });
  }
}

World::~World() {
  set_mpi_failure_context({});
  watchdog_.set_liveness({}, {});
  roll_call_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

Topology detect_topology(MPI_Comm comm) {
  int rank = 0;
  int size = 1;
  ST_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  ST_CHECK_MPI(MPI_Comm_size(comm, &size));
  MPI_Comm local_raw = MPI_COMM_NULL;
  ST_CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local_raw));
  const MpiComm local(local_raw);

  Topology topology;
  topology.local_rank = local.rank();
  topology.local_size = local.size();
  // A node is named by its lowest world rank; node_index orders nodes by that name.
  int node_leader = rank;
  ST_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &node_leader, 1, MPI_INT, MPI_MIN, local.get()));
  std::vector<int> leaders(static_cast<size_t>(size));
  ST_CHECK_MPI(MPI_Allgather(&node_leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm));
  std::sort(leaders.begin(), leaders.end());
  leaders.erase(std::unique(leaders.begin(), leaders.end()), leaders.end());
  topology.node_count = static_cast<int>(leaders.size());
  topology.node_index = static_cast<int>(
      std::lower_bound(leaders.begin(), leaders.end(), node_leader) - leaders.begin());
  return topology;
}

Topology declared_topology(int rank, int size, int ranks_per_node) {
  if (ranks_per_node <= 0 || size % ranks_per_node != 0) {
    throw std::invalid_argument("declared_topology: " + std::to_string(ranks_per_node) +
                                " ranks per node do not divide " + std::to_string(size) + " ranks");
  }
  Topology topology;
  topology.local_rank = rank % ranks_per_node;
  topology.local_size = ranks_per_node;
  topology.node_index = rank / ranks_per_node;
  topology.node_count = size / ranks_per_node;
  return topology;
}

}  // namespace st

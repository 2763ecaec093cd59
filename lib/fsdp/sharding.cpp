#include "fsdp/sharding.h"

#include <algorithm>

#include "distributed/backend.h"
#include "distributed/env_check.h"
#include "distributed/parallel_layout.h"
#include "distributed/mpi_comm.h"
#include "distributed/process_groups.h"
#include "util/check.h"
#include "util/errors.h"

namespace st {

ShardingGroups make_sharding_groups(MPI_Comm world, Sharding strategy, const Topology& topology,
                                    const CommunicatorFactory& make) {
  ShardingGroups groups;
  groups.strategy = strategy;
  int world_size = 1;
  ST_CHECK_MPI(MPI_Comm_size(world, &world_size));
  switch (strategy) {
    case Sharding::full:
    case Sharding::grad_op:
      groups.shard = make(world);
      break;
    case Sharding::none:
      groups.shard = make(MPI_COMM_SELF);
      if (world_size > 1) groups.replica = make(world);
      break;
    case Sharding::hybrid: {
      // The communicators duplicate these splits, so the splits may be freed on return.
      const ProcessGroups split = make_process_groups(world, topology);
      groups.shard = make(split.shard.get());
      if (topology.node_count > 1) groups.replica = make(split.replica.get());
      break;
    }
  }
  return groups;
}

void add_expert_groups(ShardingGroups& groups, MPI_Comm world, int64_t expert_parallel, const CommunicatorFactory& make) {
  if (expert_parallel <= 1) return;
  int size = 1, rank = 0;
  ST_CHECK_MPI(MPI_Comm_size(world, &size));
  ST_CHECK_MPI(MPI_Comm_rank(world, &rank));
  if (size % expert_parallel != 0) {
    throw ConfigError("dist.expert_parallel = " + std::to_string(expert_parallel) + " does not divide the " +
                      std::to_string(size) + " ranks of this job; choose a divisor of the rank count");
  }
  if (groups.strategy != Sharding::full && groups.strategy != Sharding::grad_op) {
    throw ConfigError("dist.expert_parallel > 1 needs dist.sharding = full or grad_op");
  }
  const int parts = static_cast<int>(expert_parallel), holders = size / parts;
  const int expert_rank = rank % parts, holder = rank / parts;
  // The communicators duplicate these splits, so the splits may be freed on return. The shard
  // group orders the world by expert run: shard index expert_rank x holders + holder.
  groups.shard = make(MpiComm::split(world, 0, expert_rank * holders + holder).get());
  groups.expert = make(MpiComm::split(world, rank / parts, rank).get());
  groups.expert_shard = make(MpiComm::split(world, expert_rank, holder).get());
}

ShardingGroups make_run_sharding_groups(const DistOptions& options, World& world) {
  const Topology topology = options.ranks_per_node > 0
                                ? declared_topology(world.rank(), world.size(), static_cast<int>(options.ranks_per_node))
                                : world.topology();
  const int device = world.local_device();
  const CommunicatorFactory make = [&](MPI_Comm comm) {
    return make_communicator(comm, options.backend, device, world.watchdog());
  };
  ShardingGroups groups = make_sharding_groups(world.comm(), options.sharding, topology, make);
  const ParallelLayout layout = parallel_layout(world.rank(), world.size(), options.context_parallel);
  if (layout.context_size > 1) {
    const MpiComm split = split_context_group(world.comm(), layout);  // the communicator duplicates it
    groups.context = make(split.get());
  }
  add_expert_groups(groups, world.comm(), options.expert_parallel, make);
  return groups;
}

std::string describe_sharding_groups(const DistOptions& options, const World& world) {
  // Node k's name and ranks, in node order.
  const int size = world.size();
  std::vector<std::string> names;
  std::vector<std::vector<int>> ranks;
  for (int rank = 0; rank < size; ++rank) {
    const std::string name = options.ranks_per_node > 0
                                 ? "node " + std::to_string(rank / options.ranks_per_node)
                                 : world.hostnames()[static_cast<size_t>(rank)];
    const auto found = std::find(names.begin(), names.end(), name);
    if (found == names.end()) {
      names.push_back(name);
      ranks.push_back({rank});
    } else {
      ranks[static_cast<size_t>(found - names.begin())].push_back(rank);
    }
  }
  std::string where;
  for (size_t node = 0; node < names.size(); ++node) {
    where += (node ? ", " : "") + names[node] + " (" + format_rank_list(ranks[node]) + ")";
  }
  const std::string hosts = std::to_string(names.size()) + (names.size() > 1 ? " hosts" : " host");
  std::string experts;
  if (options.expert_parallel > 1) {
    const int parts = static_cast<int>(options.expert_parallel), holders = size / parts;
    experts = "; experts split over " + std::to_string(parts) + " ranks (each " + std::to_string(parts) +
              " consecutive ranks), each run of them sharded over " + std::to_string(holders) + " rank(s) (ranks r, r + " +
              std::to_string(parts) + " ...)";
  }
  switch (options.sharding) {
    case Sharding::full:
    case Sharding::grad_op:
      return "one shard group of " + std::to_string(size) + " rank(s) on " + where + experts;
    case Sharding::none:
      return "no sharding: every rank holds the whole model; " + std::to_string(size) + " replicas on " + where;
    case Sharding::hybrid: {
      std::string groups;
      for (size_t node = 0; node < names.size(); ++node) {
        groups += (node ? " | " : "") + names[node] + " ranks " + format_rank_list(ranks[node]);
      }
      return "shard groups " + groups + "; replicated across " + hosts;
    }
  }
  return "";
}

}  // namespace st

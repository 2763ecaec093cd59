#include "fsdp/sharding.h"

#include "distributed/backend.h"
#include "distributed/process_groups.h"
#include "util/errors.h"

namespace st {

ShardingGroups make_sharding_groups(MPI_Comm world, Sharding strategy, const Topology& topology,
                                    const CommunicatorFactory& make) {
  ShardingGroups groups;
  groups.strategy = strategy;
  int world_size = 1;
  MPI_Comm_size(world, &world_size);
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

ShardingGroups make_run_sharding_groups(const DistOptions& options, World& world) {
  const Topology topology = options.ranks_per_node > 0
                                ? declared_topology(world.rank(), world.size(), static_cast<int>(options.ranks_per_node))
                                : world.topology();
  const int device = world.local_device();
  return make_sharding_groups(world.comm(), options.sharding, topology, [&](MPI_Comm comm) {
    return make_communicator(comm, options.backend, device, world.watchdog());
  });
}

}  // namespace st

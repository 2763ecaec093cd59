// Node topology and the hybrid-sharding sub-communicators: 4 ranks declared as 2 nodes of 2
// (odd rank counts as nodes of 1), checked by collectives inside each group.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "distributed/mpi_communicator.h"
#include "distributed/process_groups.h"
#include "mpi_test_main.h"

namespace st {
namespace {

using st::testing::test_world;

int declared_ranks_per_node(int size) { return size % 2 == 0 ? 2 : 1; }

TEST(Topology, OneMachineIsOneNode) {
  const Topology& topology = test_world().topology();
  EXPECT_EQ(topology.node_count, 1);
  EXPECT_EQ(topology.node_index, 0);
  EXPECT_EQ(topology.local_size, test_world().size());
  EXPECT_EQ(topology.local_rank, test_world().rank());
  EXPECT_EQ(test_world().local_device(), test_world().rank());
  ASSERT_EQ(static_cast<int>(test_world().hostnames().size()), test_world().size());
  for (const auto& host : test_world().hostnames()) EXPECT_EQ(host, test_world().hostname());
}

TEST(ProcessGroups, DeclaredNodesSplitIntoShardAndReplicaGroups) {
  World& world = test_world();
  const int per_node = declared_ranks_per_node(world.size());
  const Topology topology = declared_topology(world.rank(), world.size(), per_node);
  ProcessGroups groups = make_process_groups(world.comm(), topology);
  EXPECT_EQ(groups.shard.size(), per_node);
  EXPECT_EQ(groups.shard.rank(), topology.local_rank);
  EXPECT_EQ(groups.replica.size(), world.size() / per_node);
  EXPECT_EQ(groups.replica.rank(), topology.node_index);

  MpiCommunicator shard(groups.shard.get(), world.watchdog());
  const at::Tensor members = at::empty({per_node}, at::kLong);
  shard.all_gather_into(members, at::full({1}, world.rank(), at::kLong));
  for (int local = 0; local < per_node; ++local) {
    EXPECT_EQ(members[local].item<int64_t>(), topology.node_index * per_node + local);
  }

  MpiCommunicator replica(groups.replica.get(), world.watchdog());
  const at::Tensor peers = at::empty({world.size() / per_node}, at::kLong);
  replica.all_gather_into(peers, at::full({1}, world.rank(), at::kLong));
  for (int node = 0; node < world.size() / per_node; ++node) {
    EXPECT_EQ(peers[node].item<int64_t>(), node * per_node + topology.local_rank);
  }
}

TEST(ProcessGroups, HybridReduceEqualsWorldReduceScatter) {
  // Hybrid sharding syncs gradients by reduce-scatter inside the node, then all-reduce of the
  // shard across nodes: the result must equal a reduce-scatter over the node's slice of the
  // world sum.
  World& world = test_world();
  const int per_node = declared_ranks_per_node(world.size());
  const Topology topology = declared_topology(world.rank(), world.size(), per_node);
  ProcessGroups groups = make_process_groups(world.comm(), topology);
  MpiCommunicator shard(groups.shard.get(), world.watchdog());
  MpiCommunicator replica(groups.replica.get(), world.watchdog());
  MpiCommunicator everyone(world.comm(), world.watchdog());

  const int64_t shard_size = 5;
  const at::Tensor gradient =
      at::arange(shard_size * per_node, at::kFloat) * (world.rank() + 1) + world.rank();
  const at::Tensor mine = at::empty({shard_size});
  shard.reduce_scatter(mine, gradient, ReduceOp::sum);
  replica.all_reduce(mine, ReduceOp::sum);

  const at::Tensor world_sum = gradient.clone();
  everyone.all_reduce(world_sum, ReduceOp::sum);
  EXPECT_TRUE(at::allclose(mine, world_sum.narrow(0, topology.local_rank * shard_size, shard_size)));
}

}  // namespace
}  // namespace st

// Declared node layouts (dist.ranks_per_node), used to test hybrid sharding on one machine.
#include <gtest/gtest.h>

#include <stdexcept>

#include "distributed/world.h"

namespace st {
namespace {

TEST(DeclaredTopology, FourRanksAsTwoNodesOfTwo) {
  const int expected_node[] = {0, 0, 1, 1};
  const int expected_local[] = {0, 1, 0, 1};
  for (int rank = 0; rank < 4; ++rank) {
    const Topology topology = declared_topology(rank, 4, 2);
    EXPECT_EQ(topology.node_index, expected_node[rank]);
    EXPECT_EQ(topology.local_rank, expected_local[rank]);
    EXPECT_EQ(topology.local_size, 2);
    EXPECT_EQ(topology.node_count, 2);
  }
}

TEST(DeclaredTopology, RejectsLayoutsThatDoNotDivide) {
  EXPECT_THROW(declared_topology(0, 6, 4), std::invalid_argument);
  EXPECT_THROW(declared_topology(0, 4, 0), std::invalid_argument);
}

}  // namespace
}  // namespace st

// The communicators each sharding strategy (dist.sharding, distributed/dist_options.h) needs.
// Parameters are split across the shard group; gradients are reduce-scattered (summed) over it
// and then all-reduced (summed) over the replica group: data-parallel size = shard x replica.
//   full    shard = world, no replicas; re-gather in backward (ZeRO-3)
//   grad_op shard = world, no replicas; gathered parameters kept from forward to backward (ZeRO-2)
//   none    shard = this rank alone, replica = world; every rank holds everything (DDP)
//   hybrid  shard = the ranks of a node, replica = one rank per node (HSDP)
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <string>

#include "distributed/communicator.h"
#include "distributed/dist_options.h"
#include "distributed/world.h"

namespace st {

struct ShardingGroups {
  Sharding strategy = Sharding::full;
  std::unique_ptr<Communicator> shard;
  std::unique_ptr<Communicator> replica;  // null when there is one replica
  // dist.context_parallel > 1: the ranks that split each sequence (distributed/parallel_layout.h),
  // else null. Their gradients are summed with everyone's through the shard group.
  std::unique_ptr<Communicator> context;
  // dist.expert_parallel = P > 1 (else both null): `expert` the P consecutive ranks whose experts
  // together are every expert (expert-parallel rank i, world rank r with r % P = i, holds
  // experts [i E/P, (i + 1) E/P)); `expert_shard` the W/P ranks that hold the same experts and
  // shard them (i, i + P, i + 2P ...). `shard` then orders the world by expert run (shard index
  // i W/P + r / P), so an experts unit (unit_layout.h) is laid out over the shard group as any
  // unit and a rank's shard of it lies in its own experts' run: a checkpoint (rank files by
  // shard index) reshards to another P or world as any unit does.
  std::unique_ptr<Communicator> expert, expert_shard;

  bool keeps_gathered_parameters() const { return strategy == Sharding::grad_op; }
};

// Builds a Communicator over an MPI communicator (the backend choice stays with the caller).
using CommunicatorFactory = std::function<std::unique_ptr<Communicator>(MPI_Comm)>;

// Collective over `world`. `topology` decides the nodes of hybrid sharding.
ShardingGroups make_sharding_groups(MPI_Comm world, Sharding strategy, const Topology& topology,
                                    const CommunicatorFactory& make);

// Collective over `world`: the expert-parallel groups of `expert_parallel` ranks, and the shard
// group reordered by expert run (nothing for 1). Throws ConfigError when it does not divide the
// world or the strategy is not full or grad_op.
void add_expert_groups(ShardingGroups& groups, MPI_Comm world, int64_t expert_parallel, const CommunicatorFactory& make);

// The groups a run's [dist] section asks for: its strategy, backend (communicators on this
// rank's device), topology (detected, or declared by dist.ranks_per_node) and context groups
// (dist.context_parallel) and expert groups (dist.expert_parallel). Collective over the world.
ShardingGroups make_run_sharding_groups(const DistOptions& options, World& world);

// For the train log: which ranks shard together on which host, and what is replicated. Hybrid:
// "shard groups st-n1 ranks 0-1 | st-n2 ranks 2-3; replicated across 2 hosts"; full, grad_op:
// "one shard group of 4 ranks on st-n1 (0-1), st-n2 (2-3)". Declared nodes (dist.ranks_per_node)
// are "node k".
std::string describe_sharding_groups(const DistOptions& options, const World& world);

}  // namespace st

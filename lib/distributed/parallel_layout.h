// The world as data-parallel x context-parallel ranks (dist.context_parallel = C): consecutive
// ranks form a context group that splits each sequence of one data-parallel batch between them
// (model/context_split.h); the sampler, the step's counts and the metrics see the data-parallel
// ranks. Parameters stay sharded over the whole world.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "distributed/mpi_comm.h"

namespace st {

struct ParallelLayout {
  int data_rank = 0, data_size = 1;        // which batch slice this rank reads, of how many
  int context_rank = 0, context_size = 1;  // which chunks of each row, of how many ranks

  // One rank per context group counts a micro-batch's examples and losses (its group holds
  // the same values): the first.
  bool counts_examples() const { return context_rank == 0; }
};

// Throws ConfigError naming dist.context_parallel when it is < 1 or does not divide the world.
ParallelLayout parallel_layout(int world_rank, int world_size, int64_t context_parallel);

// Collective over `world`: the ranks of this rank's context group, in rank order.
MpiComm split_context_group(MPI_Comm world, const ParallelLayout& layout);

}  // namespace st

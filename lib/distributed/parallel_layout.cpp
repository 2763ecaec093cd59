#include "distributed/parallel_layout.h"

#include <string>

#include "util/errors.h"

namespace st {

ParallelLayout parallel_layout(int world_rank, int world_size, int64_t context_parallel) {
  if (context_parallel < 1 || world_size % context_parallel != 0) {
    throw ConfigError("dist.context_parallel = " + std::to_string(context_parallel) + " does not divide the " +
                      std::to_string(world_size) + " ranks of this job; set it to a divisor of the rank count");
  }
  const int parts = static_cast<int>(context_parallel);
  return {world_rank / parts, world_size / parts, world_rank % parts, parts};
}

MpiComm split_context_group(MPI_Comm world, const ParallelLayout& layout) {
  return MpiComm::split(world, layout.data_rank, layout.context_rank);
}

}  // namespace st

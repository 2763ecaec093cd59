// [dist] section: communication backend, sharding strategy, topology and the watchdog deadline.
#pragma once

#include <cstdint>
#include <string>

namespace st {

struct DistOptions {
  std::string backend = "auto";    // auto (nccl with GPUs, else mpi) | mpi | nccl
  std::string sharding = "full";   // full (ZeRO-3) | grad_op (ZeRO-2) | none | hybrid
  int64_t ranks_per_node = 0;      // 0 = detect from MPI shared memory; >0 declares it (testing)
  double timeout_s = 1800.0;       // deadline of each collective before all ranks abort [s]
};

}  // namespace st

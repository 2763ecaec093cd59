// The model's expert exchange (model/expert_exchange.h) over a communicator: the sharding
// groups' expert-parallel group, on its backend (MPI on the CPU, NCCL on the compute stream).
#pragma once

#include <memory>

#include "distributed/communicator.h"
#include "model/expert_exchange.h"

namespace st {

// Null when `group` is null (no expert parallelism). `group` outlives what is returned.
std::shared_ptr<ExpertExchange> expert_exchange_over(Communicator* group);

}  // namespace st

// The model's context exchange (model/context_exchange.h) over a communicator: the sharding
// groups' context group, on its backend (MPI on the CPU, NCCL on the compute stream).
#pragma once

#include <memory>

#include "distributed/communicator.h"
#include "model/context_exchange.h"

namespace st {

// Null when `group` is null (no context parallelism). `group` outlives what is returned.
std::shared_ptr<ContextExchange> context_exchange_over(Communicator* group);

}  // namespace st

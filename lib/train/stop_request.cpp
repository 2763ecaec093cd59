#include "train/stop_request.h"

#include "distributed/value_gather.h"
#include "util/fault_injection.h"

namespace st {

StopKind agreed_stop_kind(Communicator& world) {
  return static_cast<StopKind>(static_cast<int>(max_over_ranks(world, static_cast<double>(stop_kind()))));
}

StopBeforeTraining::StopBeforeTraining(StopKind kind, const std::string& phase)
    : Error(std::string("train: stop requested (") + enum_name(kind) + ") during the " + phase +
            " set-up, before training; nothing was written"),
      kind_(kind) {}

void stop_if_requested_during(Communicator& world, const char* phase) {
  fault_signal_at(phase);
  const StopKind kind = agreed_stop_kind(world);
  if (kind != StopKind::none) throw StopBeforeTraining(kind, phase);
}

}  // namespace st

// Stop requests agreed over the ranks: every rank acts on the strongest request any rank caught
// (util/stop_signal.h), at the same point, so no rank waits in a collective the others left.
#pragma once

#include <string>

#include "distributed/communicator.h"
#include "util/errors.h"
#include "util/stop_signal.h"

namespace st {

// Collective: the strongest stop request caught on any rank.
StopKind agreed_stop_kind(Communicator& world);

// Thrown when the ranks agree to stop while a run is being set up, before any output is written.
class StopBeforeTraining : public Error {
 public:
  StopBeforeTraining(StopKind kind, const std::string& phase);
  StopKind kind() const { return kind_; }

 private:
  StopKind kind_;
};

// Collective: throws StopBeforeTraining when a stop was requested by the end of set-up phase
// `phase` (its fault-injection point, util/stop_signal.h, is reached first).
void stop_if_requested_during(Communicator& world, const char* phase);

}  // namespace st

// Stop requests: SIGUSR1 (Slurm's --signal=B:USR1@<s> before the time limit, forwarded by
// launch.slurm) asks for a save and a requeue; SIGTERM (scancel, Slurm's own preemption, a node
// drain) asks for a save and an end. The handlers only set a flag; the trainer checks it between
// phases and steps, agrees on it over the ranks and stops there.
#pragma once

#include "util/enum_names.h"

namespace st {

// What the caught signals ask for, named by the signal that asks; `stop` outranks `requeue` (a
// user's scancel after the time warning ends the job).
enum class StopKind { none = 0, requeue = 1, stop = 2 };
template <>
struct EnumNames<StopKind> {
  static constexpr NamedValue<StopKind> table[] = {
      {StopKind::none, "no signal"}, {StopKind::requeue, "SIGUSR1"}, {StopKind::stop, "SIGTERM"}};
};

// Installs the handlers (idempotent); `shardtune train` does it first thing, so a signal during
// model load or data checks is a stop request too, not a kill.
void catch_stop_signals();
StopKind stop_kind();

}  // namespace st

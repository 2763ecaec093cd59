// Preemption requests: SIGUSR1 (Slurm's --signal=B:USR1@<s> forwarded by launch.slurm) and
// SIGTERM (scancel, node drain) set a flag instead of killing the process, so the trainer can
// finish its step, save a checkpoint and exit with kExitPreempted for the job to be requeued.
#pragma once

namespace st {

// Installs the handlers (idempotent). Later signals keep only setting the flag.
void catch_stop_signals();
bool stop_requested();
int stop_signal_number();  // the last signal caught, 0 when none
void clear_stop_request();  // tests

}  // namespace st

// Process exit codes, stable for scripts and slurm/launch.slurm.
#pragma once

namespace st {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;        // bad input other than configuration (data, model, I/O)
constexpr int kExitConfigError = 2;  // bad command line or config file
constexpr int kExitEnvMismatch = 3;  // ranks run different software (shardtune env)
// Stopped by SIGUSR1 (the time-limit warning) after saving a checkpoint: slurm/launch.slurm
// requeues the job, which continues with --resume auto. EX_TEMPFAIL of sysexits.h: "try again
// later".
constexpr int kExitPreempted = 75;
// Stopped by SIGTERM (scancel, Slurm's own preemption) after saving a checkpoint, or before
// training started with nothing written: the job ends; --resume auto continues it later. 128 +
// SIGTERM, what a shell reports for a process ended by TERM.
constexpr int kExitStopped = 143;

}  // namespace st

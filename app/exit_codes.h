// Process exit codes, stable for scripts and slurm/launch.slurm.
#pragma once

namespace st {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;        // bad input other than configuration (data, model, I/O)
constexpr int kExitConfigError = 2;  // bad command line or config file
constexpr int kExitEnvMismatch = 3;  // ranks run different software (shardtune env)
// Stopped by SIGUSR1/SIGTERM after saving a checkpoint: slurm/launch.slurm requeues the job,
// which continues with --resume auto. EX_TEMPFAIL of sysexits.h: "try again later".
constexpr int kExitPreempted = 75;

}  // namespace st

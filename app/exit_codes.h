// Process exit codes, stable for scripts and slurm/launch.slurm.
#pragma once

namespace st {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;        // bad input other than configuration (data, model, I/O)
constexpr int kExitConfigError = 2;  // bad command line or config file
constexpr int kExitEnvMismatch = 3;  // ranks run different software (shardtune env)

}  // namespace st

// Ending the whole job from any rank or thread. Unrecoverable failures (a failed or timed-out
// collective, a broken invariant) must take every rank down: one rank exiting alone leaves the
// others hanging in their next collective.
#pragma once

#include <functional>
#include <string>

namespace st {

constexpr int kAbortExitCode = 134;
// How long a rank waits for MPI_Abort to end it before it exits by itself.
constexpr int kAbortGraceSeconds = 15;

// Hooks run once, before MPI_Abort (e.g. ncclCommAbort so no kernel waits forever).
int add_abort_hook(std::function<void()> hook);
void remove_abort_hook(int id);

// Logs `reason` on stderr, runs the hooks, then MPI_Abort (or _Exit without MPI; _Exit too when
// MPI_Abort has not ended this rank after kAbortGraceSeconds). Thread-safe; a second caller just
// waits for the first to finish the job.
[[noreturn]] void abort_world(const std::string& reason, int exit_code = kAbortExitCode);

}  // namespace st

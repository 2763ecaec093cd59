// abort_world(): hooks, then MPI_Abort when MPI is live, else _Exit.
#include "util/abort.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "util/log.h"

namespace st {
namespace {

std::mutex hooks_mutex;
std::map<int, std::function<void()>> hooks;
int next_hook_id = 1;
std::atomic<bool> aborting{false};

bool mpi_is_live() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

}  // namespace

int add_abort_hook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(hooks_mutex);
  hooks[next_hook_id] = std::move(hook);
  return next_hook_id++;
}

void remove_abort_hook(int id) {
  std::lock_guard<std::mutex> lock(hooks_mutex);
  hooks.erase(id);
}

void abort_world(const std::string& reason, int exit_code) {
  if (aborting.exchange(true)) {
    // Another thread is already tearing the job down; never return into a broken state.
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  std::fflush(nullptr);  // what a piped stdout holds (results printed so far) is not lost
  warn_all(reason);
  warn_all("aborting all ranks (exit code ", exit_code, ")");
  std::map<int, std::function<void()>> to_run;
  {
    std::lock_guard<std::mutex> lock(hooks_mutex);
    to_run.swap(hooks);
  }
  for (auto& entry : to_run) entry.second();
  // MPI_Abort asks the launcher to end every rank; a rank cut off from it (its host's link is
  // down) would wait for that forever, so it ends itself a little later.
  std::thread([exit_code] {
    std::this_thread::sleep_for(std::chrono::seconds(kAbortGraceSeconds));
    std::_Exit(exit_code);
  }).detach();
  if (mpi_is_live()) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

}  // namespace st

// The deadline of MPI's start-up. A rank that dies while MPI starts (a crash inside MPI_Init)
// leaves its peers waiting in MPI_Init for ever: neither mpirun nor srun ends them, and no
// collective watchdog exists yet. Held across MPI_Init and the first exchange, this ends the
// rank with kAbortExitCode once the deadline passes, naming the deadline and its setting.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace st {

// The start-up deadline in seconds: SHARDTUNE_STARTUP_TIMEOUT_S, default 300 (a healthy start
// takes seconds; the config's dist.timeout_s is not read yet). Throws ConfigError naming the
// variable for a value that is not a positive number.
double startup_timeout_s();

class StartupDeadline {
 public:
  // `what` names the start-up phase in the message.
  StartupDeadline(std::string what, double timeout_s);
  ~StartupDeadline();  // met: the thread ends at once
  StartupDeadline(const StartupDeadline&) = delete;
  StartupDeadline& operator=(const StartupDeadline&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable met_signal_;
  bool met_ = false;
  std::thread thread_;
};

}  // namespace st

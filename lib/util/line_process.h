// A child program spoken to in lines: started once (`/bin/sh -c COMMAND`, by posix_spawn: no fork
// of an MPI process), it reads one line on its stdin per request and answers one line on its
// stdout; its stderr is the job's. The job's stop signals (USR1, USR2, TERM, INT) are ignored in
// it: it ends when its input closes (or is killed half a second later). Used by the user's
// reward program (reward.command).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

namespace st {

class LineProcess {
 public:
  // Throws IoError naming the command when it cannot be started.
  explicit LineProcess(std::string command);
  ~LineProcess();  // closes its stdin, waits briefly, then kills it
  LineProcess(const LineProcess&) = delete;
  LineProcess& operator=(const LineProcess&) = delete;

  // Writes `line` and a newline, and returns the next line it answers (without the newline).
  // Throws IoError naming the command when it has exited (with its status), closed its stdout,
  // or gave no whole line within `timeout_s` (it is then killed).
  std::string ask(const std::string& line, double timeout_s);
  const std::string& command() const { return command_; }

 private:
  [[noreturn]] void fail(const std::string& what);
  void stop();
  // Waits up to `wait` for the program to exit (its status in `status`), then kills its process
  // group; true when it exited by itself. The process is gone after.
  bool reap(std::chrono::milliseconds wait, int& status);

  std::string command_;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::string pending_;  // bytes read past the last answered line
};

}  // namespace st

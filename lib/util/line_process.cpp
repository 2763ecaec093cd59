#include "util/line_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "util/duration_text.h"
#include "util/errors.h"

extern char** environ;

namespace st {
namespace {

std::string exit_text(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped";
}

}  // namespace

LineProcess::LineProcess(std::string command) : command_(std::move(command)) {
  // A write to a program that has exited must fail with EPIPE, not kill this process.
  signal(SIGPIPE, SIG_IGN);
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
    throw IoError("cannot start `" + command_ + "`: pipe: " + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  // Its own process group: a kill reaches what the shell started too. The job's stop signals
  // (Slurm's USR1 before the time limit, scancel's TERM) reach every process of the step, and the
  // rank that owns it still needs its answers while it saves: they are ignored in it (the shell's
  // trap; ignored signals stay ignored in what it executes, Python included: blocking them alone
  // did not hold, the shell or Python unblocks them), and blocked until the trap is set. It ends
  // when its input closes. SIGPIPE is its
  // default again (this process ignores it).
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attributes, 0);
  sigset_t blocked, defaults;
  sigemptyset(&blocked);
  for (const int signal_number : {SIGUSR1, SIGUSR2, SIGTERM, SIGINT}) sigaddset(&blocked, signal_number);
  posix_spawnattr_setsigmask(&attributes, &blocked);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  const std::string script = "trap '' USR1 USR2 TERM INT; " + command_;
  const char* argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
  const int spawned = posix_spawn(&pid_, "/bin/sh", &actions, &attributes, const_cast<char**>(argv), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  to_child_ = in[1];
  from_child_ = out[0];
  if (spawned != 0) {
    pid_ = -1;
    stop();
    throw IoError("cannot start `" + command_ + "`: " + std::strerror(spawned));
  }
}

LineProcess::~LineProcess() { stop(); }

bool LineProcess::reap(std::chrono::milliseconds wait, int& status) {
  pid_t done = 0;
  for (auto waited = std::chrono::milliseconds(0); (done = waitpid(pid_, &status, WNOHANG)) == 0 && waited < wait;
       waited += std::chrono::milliseconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const bool exited = done == pid_;
  if (done == 0) {  // still running: its group killed
    kill(-pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  return exited;
}

void LineProcess::stop() {
  if (to_child_ >= 0) close(to_child_);
  to_child_ = -1;
  int status = 0;
  if (pid_ > 0) reap(std::chrono::milliseconds(500), status);  // half a second to finish
  if (from_child_ >= 0) close(from_child_);
  from_child_ = -1;
}

void LineProcess::fail(const std::string& what) {
  std::string message = "`" + command_ + "` " + what;
  // A program that closed its output is usually exiting: a moment to say how, then killed.
  int status = 0;
  if (pid_ > 0 && reap(std::chrono::milliseconds(1000), status)) message += " (it " + exit_text(status) + ")";
  stop();
  throw IoError(message);
}

std::string LineProcess::ask(const std::string& line, double timeout_s) {
  if (pid_ < 0) fail("is not running (an earlier request failed)");
  const std::string request = line + "\n";
  for (size_t written = 0; written < request.size();) {
    const ssize_t n = write(to_child_, request.data() + written, request.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(std::string("stopped reading its input: ") + std::strerror(errno));
    written += static_cast<size_t>(n);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    const size_t newline = pending_.find('\n');
    if (newline != std::string::npos) {
      std::string answer = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      return answer;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) fail("gave no answer line within " + duration_text(timeout_s) + " (killed)");
    pollfd poll_fd{from_child_, POLLIN, 0};
    const int ready = poll(&poll_fd, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) fail(std::string("poll: ") + std::strerror(errno));
    if (ready <= 0) continue;
    char buffer[65536];
    const ssize_t n = read(from_child_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(std::string("read: ") + std::strerror(errno));
    if (n == 0) fail("closed its output before answering");
    pending_.append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace st

#include "util/stop_signal.h"

#include <csignal>
#include <cstdlib>
#include <string>

namespace st {
namespace {

volatile std::sig_atomic_t caught_kind = 0;

StopKind stop_kind_of_signal(int number) {
  if (number == SIGTERM) return StopKind::stop;
  if (number == SIGUSR1) return StopKind::requeue;
  return StopKind::none;
}

extern "C" void on_stop_signal(int number) {
  const auto kind = static_cast<std::sig_atomic_t>(stop_kind_of_signal(number));
  if (kind > caught_kind) caught_kind = kind;
}

}  // namespace

void catch_stop_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // blocking reads and MPI progress go on after the flag is set
  sigaction(SIGUSR1, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

StopKind stop_kind() { return static_cast<StopKind>(caught_kind); }


}  // namespace st

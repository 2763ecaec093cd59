#include "util/stop_signal.h"

#include <csignal>

namespace st {
namespace {

volatile std::sig_atomic_t caught_signal = 0;

extern "C" void on_stop_signal(int number) { caught_signal = number; }

}  // namespace

void catch_stop_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // blocking reads and MPI progress go on after the flag is set
  sigaction(SIGUSR1, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool stop_requested() { return caught_signal != 0; }
int stop_signal_number() { return caught_signal; }
void clear_stop_request() { caught_signal = 0; }

}  // namespace st

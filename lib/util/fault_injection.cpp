#include "util/fault_injection.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace st {
namespace {

struct InjectedFaults {
  std::string signal_phase;  // "" = none
  int signal = 0;
  int64_t kill_in_save_step = -1;
  long long stall_rank = -1, stall_step = -1, stall_unit = -1;
  long long pace_from_step = -1;
  double pace_seconds = 0;
};

InjectedFaults read_faults() {
  InjectedFaults faults;
  if (const char* spec = std::getenv("ST_TEST_SIGNAL_AT")) {
    const std::string text = spec;
    const auto colon = text.find(':');
    const std::string name = colon == std::string::npos ? "" : text.substr(colon + 1);
    faults.signal = name == "USR1" ? SIGUSR1 : name == "TERM" ? SIGTERM : 0;
    if (faults.signal != 0) faults.signal_phase = text.substr(0, colon);
  }
  if (const char* step = std::getenv("ST_TEST_KILL_IN_SAVE")) faults.kill_in_save_step = std::atoll(step);
  if (const char* spec = std::getenv("ST_TEST_STALL_AT")) {
    if (std::sscanf(spec, "%lld:%lld:%lld", &faults.stall_rank, &faults.stall_step, &faults.stall_unit) != 3) {
      faults.stall_rank = -1;
    }
  }
  if (const char* spec = std::getenv("ST_TEST_STEP_SECONDS")) {
    if (std::sscanf(spec, "%lld:%lf", &faults.pace_from_step, &faults.pace_seconds) != 2) faults.pace_from_step = -1;
  }
  return faults;
}

const InjectedFaults& faults() {
  static const InjectedFaults read = read_faults();
  return read;
}

}  // namespace

void fault_signal_at(const char* phase) {
  if (!faults().signal_phase.empty() && faults().signal_phase == phase) std::raise(faults().signal);
}

void fault_kill_in_save(int64_t step, bool last_shard) {
  if (last_shard && faults().kill_in_save_step == step) std::raise(SIGKILL);
}

void fault_stall_before_gather(int rank, int64_t step, size_t unit) {
  const InjectedFaults& f = faults();
  if (f.stall_rank < 0 || f.stall_rank != rank || f.stall_step != step || f.stall_unit != static_cast<long long>(unit)) {
    return;
  }
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

void fault_pace_step(int64_t step, double took_s) {
  const InjectedFaults& f = faults();
  if (f.pace_from_step < 0 || step < f.pace_from_step || took_s >= f.pace_seconds) return;
  std::this_thread::sleep_for(std::chrono::duration<double>(f.pace_seconds - took_s));
}

}  // namespace st

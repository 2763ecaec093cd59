// Collective deadlines. Every collective arms a ticket before it starts and disarms it when it
// completes; a background thread aborts the world when a ticket outlives its deadline, logging
// "[r1/4 host] all_reduce(sum, float32 x 10) on unit 3 step 12 timed out after 30 s".
// A hang anywhere in the job thus ends every rank within the deadline instead of never.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace st {

// What the training loop is doing, for timeout messages; set by the FSDP engine and trainer.
struct CollectiveContext {
  int64_t step = -1;  // optimizer step, -1 = outside training
  int unit = -1;      // FSDP unit index, -1 = none
};
CollectiveContext& current_collective_context();  // thread-local
// "on unit 3 step 12", "step 12", or "" outside training: for messages about a collective.
std::string describe_context(const CollectiveContext& context);

class ScopedCollectiveContext {
 public:
  ScopedCollectiveContext(int64_t step, int unit);
  ~ScopedCollectiveContext();
  ScopedCollectiveContext(const ScopedCollectiveContext&) = delete;
  ScopedCollectiveContext& operator=(const ScopedCollectiveContext&) = delete;

 private:
  CollectiveContext saved_;
};

class Watchdog {
 public:
  using Ticket = uint64_t;
  // Polled by the watchdog thread for work it cannot see complete itself (GPU events); returns
  // true once done. Must be thread-safe.
  using CompletionPoll = std::function<bool()>;

  explicit Watchdog(double timeout_s);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void set_timeout(double timeout_s);
  double timeout() const { return timeout_s_.load(); }

  // Liveness for timeout messages (distributed/roll_call.h): `on_wake` runs each time the
  // thread wakes while a collective has waited long (a quarter of the deadline),
  // to answer the other ranks' pings; `on_expiry(wait_s)` before an abort, waiting up to wait_s
  // for answers, its text appended to the reason. Healthy collectives never wait that long, so
  // this thread calls into MPI only when the job already hangs. Empty functions detach them;
  // this returns once neither runs.
  void set_liveness(std::function<void()> on_wake, std::function<std::string(double wait_s)> on_expiry);
  // Who stopped answering, from any thread: after a timeout (the peers in the hung collective
  // answer at once), or after a failed collective (`failed`: the peers still in it answer only
  // once they have waited a quarter of the deadline, so this waits that long too).
  std::string liveness_report(bool failed = false);

  // `operation` names the collective; the current context (unit, step) is appended.
  // `owner` tags the ticket for disarm_all (a poll that uses its owner's state).
  Ticket arm(const std::string& operation, CompletionPoll poll = {}, const void* owner = nullptr);
  void disarm(Ticket ticket);
  // Drops every ticket of `owner`; no poll of them runs once this returns (polls run under the
  // lock), so an owner going away disarms first and its polls never see it destroyed.
  void disarm_all(const void* owner);
  size_t armed_count() const;

 private:
  struct Entry {
    std::string description;
    std::chrono::steady_clock::time_point started;
    std::chrono::steady_clock::time_point deadline;
    CompletionPoll poll;
    const void* owner = nullptr;
  };
  void run();
  void start_thread_locked();

  std::atomic<double> timeout_s_;
  std::mutex liveness_mutex_;  // held while a liveness function runs; never with mutex_
  std::function<void()> on_wake_;
  std::function<std::string(double)> on_expiry_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::map<Ticket, Entry> entries_;
  Ticket next_ticket_ = 1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace st

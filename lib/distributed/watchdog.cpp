// The watchdog thread: wakes a few times per second, retires polled tickets, aborts on expiry.
#include "distributed/watchdog.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "util/abort.h"

namespace st {

CollectiveContext& current_collective_context() {
  thread_local CollectiveContext context;
  return context;
}

std::string describe_context(const CollectiveContext& context) {
  std::string where;
  if (context.unit >= 0) where += "on unit " + std::to_string(context.unit);
  if (context.step >= 0) where += std::string(where.empty() ? "" : " ") + "step " + std::to_string(context.step);
  return where;
}

ScopedCollectiveContext::ScopedCollectiveContext(int64_t step, int unit)
    : saved_(current_collective_context()) {
  current_collective_context() = CollectiveContext{step, unit};
}

ScopedCollectiveContext::~ScopedCollectiveContext() { current_collective_context() = saved_; }

Watchdog::Watchdog(double timeout_s) : timeout_s_(timeout_s) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::set_timeout(double timeout_s) { timeout_s_.store(timeout_s); }

void Watchdog::set_liveness(std::function<void()> on_wake, std::function<std::string(double)> on_expiry) {
  {
    std::lock_guard<std::mutex> live(liveness_mutex_);
    on_wake_ = std::move(on_wake);
    on_expiry_ = std::move(on_expiry);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  start_thread_locked();  // answers pings before this rank's first collective, too
}

std::string Watchdog::liveness_report(bool failed) {
  // Long enough for a busy peer's watchdog to wake, short next to any deadline.
  const double timeout = timeout_s_.load();
  double wait_s = std::min(3.0, std::max(0.5, timeout / 2.0));
  if (failed) wait_s += timeout / 4.0;
  std::lock_guard<std::mutex> live(liveness_mutex_);
  return on_expiry_ ? on_expiry_(wait_s) : "a rank is stuck, died, or skipped this collective";
}

Watchdog::Ticket Watchdog::arm(const std::string& operation, CompletionPoll poll, const void* owner) {
  const std::string where = describe_context(current_collective_context());
  std::string description = where.empty() ? operation : operation + " " + where;

  const auto now = std::chrono::steady_clock::now();
  const auto budget = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(timeout_s_.load()));
  std::lock_guard<std::mutex> lock(mutex_);
  start_thread_locked();
  const Ticket ticket = next_ticket_++;
  entries_[ticket] = Entry{std::move(description), now, now + budget, std::move(poll), owner};
  return ticket;
}

void Watchdog::disarm(Ticket ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.erase(ticket);
}

void Watchdog::disarm_all(const void* owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto entry = entries_.begin(); entry != entries_.end();) {
    entry = entry->second.owner == owner ? entries_.erase(entry) : std::next(entry);
  }
}

size_t Watchdog::armed_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

void Watchdog::start_thread_locked() {
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
}

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    // Check often enough that a short test deadline is honoured within ~10%.
    const double period = std::min(0.2, std::max(0.01, timeout_s_.load() / 10.0));
    wake_.wait_for(lock, std::chrono::duration<double>(period));
    if (stopping_) break;
    // Ranks stuck in the same step entered their collectives about together: by the first
    // expiry each has waited about the whole deadline, far over a quarter of it.
    const double waiting_long = timeout_s_.load() / 4.0;
    const bool hanging = std::any_of(entries_.begin(), entries_.end(), [&](const auto& entry) {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - entry.second.started).count() >
             waiting_long;
    });
    if (hanging) {
      lock.unlock();
      {
        std::lock_guard<std::mutex> live(liveness_mutex_);
        if (on_wake_) on_wake_();
      }
      lock.lock();
      if (stopping_) break;
    }
    const auto now = std::chrono::steady_clock::now();
    std::vector<Ticket> finished;
    for (auto& [ticket, entry] : entries_) {
      if (entry.poll && entry.poll()) {
        finished.push_back(ticket);
        continue;
      }
      if (now < entry.deadline) continue;
      const double waited = std::chrono::duration<double>(now - entry.started).count();
      std::ostringstream reason;
      reason << entry.description << " timed out after " << waited
             << " s (dist.timeout_s = " << timeout_s_.load()
             << ")";
      lock.unlock();
      abort_world(reason.str() + "; " + liveness_report());
    }
    for (Ticket ticket : finished) entries_.erase(ticket);
  }
}

}  // namespace st

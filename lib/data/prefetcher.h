// A background thread that produces items ahead of the consumer into a bounded queue. An
// exception in the producer is handed to the consumer at next(); destruction stops the thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace st {

template <typename T>
class Prefetcher {
 public:
  Prefetcher(std::function<T()> produce, size_t depth)
      : produce_(std::move(produce)), depth_(depth < 1 ? 1 : depth), thread_([this] { run(); }) {}

  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Blocks until an item is ready; rethrows the producer's exception.
  T next() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !queue_.empty() || error_; });
    if (queue_.empty()) std::rethrow_exception(error_);
    T item = std::move(queue_.front());
    queue_.pop_front();
    changed_.notify_all();
    return item;
  }

 private:
  void run() {
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return stopping_ || queue_.size() < depth_; });
        if (stopping_) return;
      }
      try {
        T item = produce_();
        std::lock_guard<std::mutex> lock(mutex_);
        queue_.push_back(std::move(item));
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        error_ = std::current_exception();
        changed_.notify_all();
        return;
      }
      changed_.notify_all();
    }
  }

  std::function<T()> produce_;
  size_t depth_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<T> queue_;
  std::exception_ptr error_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts after the members it uses exist
};

}  // namespace st

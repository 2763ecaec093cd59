#include "progress_bar.h"

#include <unistd.h>

#include <cstdio>

namespace st {

ProgressBar::ProgressBar(int64_t total_steps, bool allowed, bool forced)
    : total_(total_steps), enabled_(allowed && (forced || isatty(STDOUT_FILENO) == 1)) {}

void ProgressBar::update(int64_t done, double elapsed_s) {
  if (!enabled_ || total_ <= 0) return;
  constexpr int kWidth = 30;
  const double fraction = static_cast<double>(done) / static_cast<double>(total_);
  const int filled = static_cast<int>(fraction * kWidth);
  const double eta = done > 0 ? elapsed_s / static_cast<double>(done) * static_cast<double>(total_ - done) : 0.0;
  const auto seconds = static_cast<long long>(eta);
  std::printf("\r\033[K[%.*s%*s] %lld/%lld %3.0f%%  ETA %lld:%02lld:%02lld", filled,
              "##############################", kWidth - filled, "", static_cast<long long>(done),
              static_cast<long long>(total_), 100.0 * fraction, seconds / 3600, seconds / 60 % 60, seconds % 60);
  std::fflush(stdout);
  drawn_ = true;
}

void ProgressBar::clear() {
  if (!drawn_) return;
  std::printf("\r\033[K");
  std::fflush(stdout);
  drawn_ = false;
}

}  // namespace st

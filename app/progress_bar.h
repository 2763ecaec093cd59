// A progress bar with ETA for rank 0's terminal; drawn only when stdout is one, so batch logs
// (Slurm output files) get the plain metric lines alone.
#pragma once

#include <cstdint>

#include "util/enum_names.h"

namespace st {

// `train --progress`: auto = when stdout is a terminal.
enum class ProgressMode { automatic, on, off };
template <>
struct EnumNames<ProgressMode> {
  static constexpr NamedValue<ProgressMode> table[] = {
      {ProgressMode::automatic, "auto"}, {ProgressMode::on, "on"}, {ProgressMode::off, "off"}};
};

class ProgressBar {
 public:
  // Drawn when `allowed` and stdout is a terminal, or when `forced`.
  ProgressBar(int64_t total_steps, bool allowed, bool forced);
  void update(int64_t done, double elapsed_s);
  void clear();  // before a log line, so the line does not land inside the bar

 private:
  int64_t total_;
  bool enabled_;
  bool drawn_ = false;
};

}  // namespace st

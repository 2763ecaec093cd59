// Rank-aware logging: every line carries "[r3/16 host]". log0 prints on rank 0 only, log_all on
// every rank; warn* go to stderr. Lines from threads never interleave.
#pragma once

#include <sstream>
#include <string>
#include <utility>

namespace st {

// Set once the rank is known (World does it); before that the prefix reads "[r?/? host]".
void set_log_identity(int rank, int size, const std::string& host);
std::string log_prefix();
int log_rank();

enum class LogStream { out, err };
void write_log_line(LogStream stream, const std::string& message);

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}
}  // namespace detail

template <typename... Args>
void log0(Args&&... args) {
  if (log_rank() <= 0) write_log_line(LogStream::out, detail::concat(std::forward<Args>(args)...));
}
template <typename... Args>
void log_all(Args&&... args) {
  write_log_line(LogStream::out, detail::concat(std::forward<Args>(args)...));
}
template <typename... Args>
void warn0(Args&&... args) {
  if (log_rank() <= 0) write_log_line(LogStream::err, detail::concat(std::forward<Args>(args)...));
}
template <typename... Args>
void warn_all(Args&&... args) {
  write_log_line(LogStream::err, detail::concat(std::forward<Args>(args)...));
}

}  // namespace st

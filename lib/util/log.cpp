// Process-wide log identity and a mutex so lines from several threads stay whole.
#include "util/log.h"

#include <unistd.h>

#include <cstdio>
#include <mutex>

namespace st {
namespace {

std::mutex log_mutex;
int identity_rank = -1;
int identity_size = -1;
std::string identity_host;

std::string local_hostname() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

}  // namespace

void set_log_identity(int rank, int size, const std::string& host) {
  std::lock_guard<std::mutex> lock(log_mutex);
  identity_rank = rank;
  identity_size = size;
  identity_host = host;
}

std::string log_prefix() {
  std::lock_guard<std::mutex> lock(log_mutex);
  const std::string host = identity_host.empty() ? local_hostname() : identity_host;
  if (identity_rank < 0) return "[r?/? " + host + "]";
  return "[r" + std::to_string(identity_rank) + "/" + std::to_string(identity_size) + " " + host +
         "]";
}

int log_rank() {
  std::lock_guard<std::mutex> lock(log_mutex);
  return identity_rank;
}

void write_log_line(LogStream stream, const std::string& message) {
  const std::string line = log_prefix() + " " + message + "\n";
  std::lock_guard<std::mutex> lock(log_mutex);
  FILE* out = stream == LogStream::out ? stdout : stderr;
  std::fwrite(line.data(), 1, line.size(), out);
  std::fflush(out);
}

}  // namespace st

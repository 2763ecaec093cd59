#include "util/host_memory.h"

#include <cstdlib>
#include <fstream>
#include <string>

namespace st {
namespace {

int64_t status_bytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atoll(line.c_str() + field.size() + 1) * 1024;  // kB
  }
  return -1;
}

}  // namespace

int64_t resident_bytes() { return status_bytes("VmRSS"); }
int64_t peak_resident_bytes() { return status_bytes("VmHWM"); }

bool reset_peak_resident() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";  // 5: reset the peak resident set size
  clear.flush();
  return static_cast<bool>(clear);
}

}  // namespace st

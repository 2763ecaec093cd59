#include "util/host_memory.h"

#include <sys/mman.h>

#include <malloc.h>

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

void keep_freed_host_memory() {
  // Blocks above 32 MiB (glibc's largest mmap threshold) would always be fresh mappings: no
  // mmap at all, and the heap top is not given back below 1 GiB of free space.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

bool reset_peak_resident() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";  // 5: reset the peak resident set size
  clear.flush();
  return static_cast<bool>(clear);
}

void advise_huge_pages(void* data, size_t bytes) {
  constexpr uintptr_t kHugePage = 2u << 20;
  const auto first = (reinterpret_cast<uintptr_t>(data) + kHugePage - 1) & ~(kHugePage - 1);
  const auto last = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHugePage - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

}  // namespace st

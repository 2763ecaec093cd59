// This process's resident memory from /proc/self/status (Linux): current (VmRSS) and peak
// (VmHWM), and resetting the peak to the current value through /proc/self/clear_refs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace st {

int64_t resident_bytes();       // -1 when unavailable
int64_t peak_resident_bytes();  // -1 when unavailable
// Makes glibc keep freed large blocks for reuse instead of returning them to the kernel: a
// training step frees and reallocates the same big tensors, and fresh mappings cost a page
// fault per 4 KiB (measured: a fifth of a CPU step). Peak RSS then includes the reused cache.
void keep_freed_host_memory();
// Asks for transparent huge pages on [data, data + bytes) before it is first touched: filling
// gigabytes of fresh host memory costs one page fault per 4 KiB otherwise (measured: half of a
// checkpoint load). A hint; ignored where THP is off.
void advise_huge_pages(void* data, size_t bytes);
// false when the kernel refuses (then the peak covers the whole process lifetime).
bool reset_peak_resident();

}  // namespace st

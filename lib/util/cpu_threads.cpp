#include "util/cpu_threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace st {

int cpu_threads_per_rank(int ranks_on_node) {
  if (const char* chosen = std::getenv("OMP_NUM_THREADS")) {
    char* end = nullptr;
    const long threads = std::strtol(chosen, &end, 10);
    if (end != chosen && *end == 0 && threads > 0) return static_cast<int>(std::min(threads, 4096L));
  }
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const int bound = sched_getaffinity(0, sizeof(allowed), &allowed) == 0 ? CPU_COUNT(&allowed) : machine;
  if (bound > 0 && bound < machine) return bound;
  return std::max(1, machine / std::max(1, ranks_on_node));
}

void use_cpu_threads(int threads) {
  at::set_num_threads(threads);
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr) return;
  using SetThreads = void (*)(int);
  // Looked up, not linked: the BLAS libtorch loaded may be another (MKL, the reference BLAS).
  if (const auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(threads);
}

void use_rank_share_of_cores(int ranks_on_node) { use_cpu_threads(cpu_threads_per_rank(ranks_on_node)); }

}  // namespace st

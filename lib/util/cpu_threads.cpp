#include "util/cpu_threads.h"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace st {

int cpu_threads_per_rank(int ranks_on_node) {
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const int bound = sched_getaffinity(0, sizeof(allowed), &allowed) == 0 ? CPU_COUNT(&allowed) : machine;
  if (bound > 0 && bound < machine) return bound;
  return std::max(1, machine / std::max(1, ranks_on_node));
}

}  // namespace st

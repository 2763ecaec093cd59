#include "util/cpu_threads.h"

#include <sched.h>
#include <strings.h>

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

bool cpu_has_avx2_and_fma() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

std::string blas_kernel_advice(const std::string& blas_core, bool avx2_and_fma) {
  if (strcasecmp(blas_core.c_str(), "Prescott") != 0 || !avx2_and_fma) return "";
  return "OpenBLAS runs its generic kernels (core Prescott: it does not know the CPU), though the CPU has AVX2 and "
         "FMA; OPENBLAS_CORETYPE=Haswell, set before shardtune starts, runs its AVX2 kernels";
}

}  // namespace st

#include "util/blas_kernels.h"

#include <dlfcn.h>
#include <strings.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "util/build_info.h"

namespace st {
namespace {

bool dynamic_openblas() {
  using Text = char* (*)();
  const auto config = reinterpret_cast<Text>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
  return config && std::strstr(config(), "DYNAMIC_ARCH") != nullptr;
}

}  // namespace

CpuVectorUnits cpu_vector_units() {
  CpuVectorUnits units;
#if defined(__x86_64__)
  units.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  units.avx512 = units.avx2_fma && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                 __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                 __builtin_cpu_supports("avx512vl");
#endif
  return units;
}

std::string better_blas_core(const std::string& current, CpuVectorUnits units) {
  if (strcasecmp(current.c_str(), "Prescott") != 0) return "";
  if (units.avx512) return "SkylakeX";
  if (units.avx2_fma) return "Haswell";
  return "";
}

void run_the_best_blas_kernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr || std::getenv(kBlasGenericCoreVariable) != nullptr) return;
  const std::string current = blas_core();
  const std::string better = better_blas_core(current, cpu_vector_units());
  if (better.empty() || !dynamic_openblas()) return;
  setenv("OPENBLAS_CORETYPE", better.c_str(), 1);
  setenv(kBlasGenericCoreVariable, current.c_str(), 1);
  execv("/proc/self/exe", argv);
  // No restart (no /proc): run on as OpenBLAS chose, the environment as it was.
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv(kBlasGenericCoreVariable);
}

std::string blas_kernel_note() {
  const char* replaced = std::getenv(kBlasGenericCoreVariable);
  const std::string now = blas_core();
  if (replaced == nullptr || *replaced == 0 || strcasecmp(replaced, now.c_str()) == 0) return "";
  return "OpenBLAS does not know this CPU and picked its generic " + std::string(replaced) + " kernels; running its " +
         now + " kernels instead (set OPENBLAS_CORETYPE to choose)";
}

}  // namespace st

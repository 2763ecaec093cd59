// OpenBLAS picks its kernels as it loads, from the CPU it recognises; one older than the CPU (Debian
// 12's 0.3.21 on Sapphire/Emerald Rapids or a VM's generic "Intel Xeon Processor") falls back to
// its generic SSE3 kernels, core "Prescott", 2-3x slower than the AVX2 or AVX-512 ones the CPU
// runs (docs/performance.md, "CPU runs"). shardtune then restarts itself with OPENBLAS_CORETYPE
// set to the best core the CPU supports, unless the user set OPENBLAS_CORETYPE (their choice).
#pragma once

#include <string>

namespace st {

struct CpuVectorUnits {
  bool avx2_fma = false;
  bool avx512 = false;  // F, CD, BW, DQ and VL: what OpenBLAS's SkylakeX kernels use
};
CpuVectorUnits cpu_vector_units();

// The core to run instead of `current` (openblas_get_corename): SkylakeX with AVX-512, Haswell
// with AVX2 + FMA; "" when `current` is not the generic Prescott (OpenBLAS knew the CPU, or the
// BLAS is not OpenBLAS) or the CPU has neither.
std::string better_blas_core(const std::string& current, CpuVectorUnits units);

// First thing in main: where better_blas_core names a core, OpenBLAS is built with DYNAMIC_ARCH
// and OPENBLAS_CORETYPE is unset, re-executes this binary with OPENBLAS_CORETYPE set (and
// SHARDTUNE_BLAS_GENERIC_CORE naming the core it replaced); returns otherwise, also where
// SHARDTUNE_BLAS_GENERIC_CORE is set (empty: keep OpenBLAS's own pick).
void run_the_best_blas_kernels(char** argv);

// Set in a restarted process: the core OpenBLAS picked by itself (empty beforehand: keep it).
inline constexpr const char* kBlasGenericCoreVariable = "SHARDTUNE_BLAS_GENERIC_CORE";

// The line a restarted process says (train logs it): which kernels run instead of which. "" when
// shardtune chose nothing.
std::string blas_kernel_note();

}  // namespace st

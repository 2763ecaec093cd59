// How many CPU threads one rank should compute with: the cores the launcher bound it to
// (sched_getaffinity), or, when it was not bound (the affinity is the whole machine), the
// machine's cores split evenly over the ranks on this node. Without this every rank would run
// libtorch with all cores and N ranks would oversubscribe the node N times.
#pragma once

#include <string>

namespace st {

int cpu_threads_per_rank(int ranks_on_node);

// Advice for a CPU run whose OpenBLAS runs its generic SSE3 kernels (core "Prescott": an OpenBLAS
// older than the CPU does not know it) on a CPU that has AVX2 and FMA: OPENBLAS_CORETYPE=Haswell,
// which OpenBLAS reads as it loads, so the process cannot set it for itself. "" otherwise.
// bench/cpu_environment.sh measures it (docs/performance.md).
std::string blas_kernel_advice(const std::string& blas_core, bool avx2_and_fma);
bool cpu_has_avx2_and_fma();

}  // namespace st

// Which OpenBLAS kernels shardtune restarts on when OpenBLAS fell back to its generic ones.
#include <gtest/gtest.h>

#include "util/blas_kernels.h"

namespace st {
namespace {

TEST(BlasKernels, ReplacesOnlyTheGenericCoreWithTheBestTheCpuRuns) {
  const CpuVectorUnits avx512{true, true}, avx2{true, false}, sse{false, false};
  EXPECT_EQ(better_blas_core("Prescott", avx512), "SkylakeX");
  EXPECT_EQ(better_blas_core("Prescott", avx2), "Haswell");
  EXPECT_EQ(better_blas_core("PRESCOTT", avx2), "Haswell") << "OpenBLAS's core names are case-insensitive";
  EXPECT_EQ(better_blas_core("Prescott", sse), "") << "a CPU without AVX2 and FMA has no better kernels";
  EXPECT_EQ(better_blas_core("Haswell", avx512), "") << "OpenBLAS knew the CPU: its choice stands";
  EXPECT_EQ(better_blas_core("Zen", avx2), "");
  EXPECT_EQ(better_blas_core("", avx512), "") << "not OpenBLAS";
}

TEST(BlasKernels, SaysNothingWhereShardtuneChoseNothing) {
  unsetenv("SHARDTUNE_BLAS_GENERIC_CORE");
  EXPECT_EQ(blas_kernel_note(), "");
}

}  // namespace
}  // namespace st

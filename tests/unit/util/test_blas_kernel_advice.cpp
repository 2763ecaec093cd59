// The advice a CPU run prints when OpenBLAS runs generic kernels on a CPU that has better ones.
#include <gtest/gtest.h>

#include "util/cpu_threads.h"

namespace st {
namespace {

TEST(BlasKernelAdvice, NamesTheGenericCoreOnlyWhereTheCpuRunsHaswellKernels) {
  const std::string advice = blas_kernel_advice("Prescott", true);
  EXPECT_NE(advice.find("core Prescott"), std::string::npos) << advice;
  EXPECT_NE(advice.find("OPENBLAS_CORETYPE=Haswell, set before shardtune starts"), std::string::npos) << advice;
  EXPECT_EQ(blas_kernel_advice("PRESCOTT", true), advice) << "OpenBLAS's core names are case-insensitive";
  EXPECT_EQ(blas_kernel_advice("Prescott", false), "") << "a CPU without AVX2 and FMA has no better kernels";
  EXPECT_EQ(blas_kernel_advice("Haswell", true), "");
  EXPECT_EQ(blas_kernel_advice("SkylakeX", true), "");
  EXPECT_EQ(blas_kernel_advice("", true), "") << "not OpenBLAS";
}

}  // namespace
}  // namespace st

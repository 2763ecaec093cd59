// The BLAS kernels a test runs with. The bit-identity tests run a second time under another
// OpenBLAS core type (cmake/testing.cmake); that run proves something only if OpenBLAS really
// runs the core asked for, and it differs from the one this machine picks by itself.
#include <gtest/gtest.h>
#include <strings.h>

#include <cstdlib>
#include <string>

#include "util/build_info.h"

namespace st {
namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

TEST(BlasCore, IsTheOneThisRunExpects) {
  const std::string core = blas_core();
  const std::string expected = environment("ST_EXPECTED_BLAS_CORETYPE");
  if (core.empty() || expected.empty()) {
    GTEST_SKIP() << "BLAS " << blas_version() << ", expected core '" << expected << "': nothing to check";
  }
  EXPECT_EQ(strcasecmp(core.c_str(), expected.c_str()), 0) << blas_version() << ", expected core " << expected
      << " (chosen when cmake configured this build: OPENBLAS_CORETYPE differs from then; reconfigure here)";
  const std::string machine = environment("ST_DEFAULT_BLAS_CORETYPE");
  if (!environment("OPENBLAS_CORETYPE").empty()) {
    EXPECT_NE(strcasecmp(expected.c_str(), machine.c_str()), 0)
        << "the second run must not use this machine's own kernels";
  }
}

}  // namespace
}  // namespace st

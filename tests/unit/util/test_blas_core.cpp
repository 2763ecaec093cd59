// The BLAS kernels a test runs with. The bit-identity tests run a second time under another
// OpenBLAS core type (cmake/testing.cmake); that run proves something only if OpenBLAS really
// runs the core asked for, and it differs from the one this machine picks by itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "util/build_info.h"

namespace st {
namespace {

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

TEST(BlasCore, IsTheOneThisRunExpects) {
  const std::string blas = blas_version();
  const std::string expected = environment("ST_EXPECTED_BLAS_CORETYPE");
  if (blas.rfind("OpenBLAS", 0) != 0 || expected.empty()) {
    GTEST_SKIP() << "BLAS " << blas << ", expected core '" << expected << "': nothing to check";
  }
  EXPECT_NE(lowercase(blas).find("(core " + lowercase(expected) + ")"), std::string::npos)
      << blas << ", expected core " << expected;
  const std::string machine = environment("ST_DEFAULT_BLAS_CORETYPE");
  if (!environment("OPENBLAS_CORETYPE").empty()) {
    EXPECT_NE(lowercase(expected), lowercase(machine)) << "the second run must not use this machine's own kernels";
  }
}

}  // namespace
}  // namespace st

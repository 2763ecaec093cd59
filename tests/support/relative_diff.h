// Shared by the unit, MPI and cuda tiers: how far a result is from its reference, as the largest
// absolute difference over the reference's largest magnitude.
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace st::testing {

// max |got - want| / max |want|, both compared in `compare_in` (the kernel parity tests compare
// in fp32, everything else in fp64).
inline double relative_max_diff(const at::Tensor& got, const at::Tensor& want, at::ScalarType compare_in = at::kDouble) {
  const at::Tensor reference = want.to(compare_in);
  return (got.to(compare_in) - reference).abs().max().item<double>() /
         std::max(1e-12, reference.abs().max().item<double>());
}

// relative_max_diff, also appended with its bound to $ST_TOLERANCE_LOG when that is set
// (scripts/tolerance_table.sh: each comparison's worst under every BLAS core). One JSON line per
// call, named by the running test and the call's place; a short append, so ranks may share the file.
inline double recorded_relative_diff(const at::Tensor& got, const at::Tensor& want, double bound, const char* file,
                                     int line, at::ScalarType compare_in = at::kDouble) {
  const double diff = relative_max_diff(got, want, compare_in);
  const char* log = std::getenv("ST_TOLERANCE_LOG");
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  if (log != nullptr && *log != '\0' && test != nullptr) {
    std::string place = file;
    place = place.substr(place.find_last_of('/') + 1) + ":" + std::to_string(line);
    if (FILE* out = std::fopen(log, "a")) {
      std::fprintf(out, "{\"test\": \"%s.%s\", \"check\": \"relative\", \"expected\": \"%s\", \"actual\": \"\", "
                   "\"worst\": %.17g, \"tolerance\": %.17g}\n",
                   test->test_suite_name(), test->name(), place.c_str(), diff, bound);
      std::fclose(out);
    }
  }
  return diff;
}

}  // namespace st::testing

// The relative difference of got and want, recorded against `bound` (recorded_relative_diff).
#define ST_RELATIVE_DIFF(got, want, bound, ...) \
  ::st::testing::recorded_relative_diff((got), (want), (bound), __FILE__, __LINE__, ##__VA_ARGS__)

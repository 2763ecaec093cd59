// Shared by the unit, MPI and cuda tiers: how far a result is from its reference, as the largest
// absolute difference over the reference's largest magnitude.
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

// Appends one comparison's value and bound (in `unit`s where not 0) to $ST_TOLERANCE_LOG when that is set
// (scripts/tolerance_table.sh: each comparison's worst under every BLAS core). One JSON line per
// call, named by the running test and the call's place; a short append, so ranks may share the file.
inline void record_tolerance(double worst, double bound, const char* check, const char* file, int line,
                             double unit = 0.0) {
  const char* log = std::getenv("ST_TOLERANCE_LOG");
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  if (log == nullptr || *log == '\0' || test == nullptr) return;
  std::string place = file;
  place = place.substr(place.find_last_of('/') + 1) + ":" + std::to_string(line);
  if (FILE* out = std::fopen(log, "a")) {
    std::fprintf(out, "{\"test\": \"%s.%s\", \"check\": \"%s\", \"expected\": \"%s\", \"actual\": \"\", "
                 "\"worst\": %.17g, \"tolerance\": %.17g, \"unit\": %.17g}\n",
                 test->test_suite_name(), test->name(), check, place.c_str(), worst, bound, unit);
    std::fclose(out);
  }
}

// relative_max_diff, also recorded with its bound (record_tolerance).
inline double recorded_relative_diff(const at::Tensor& got, const at::Tensor& want, double bound, const char* file,
                                     int line, at::ScalarType compare_in = at::kDouble) {
  const double diff = relative_max_diff(got, want, compare_in);
  record_tolerance(diff, bound, "relative", file, line);
  return diff;
}

// `got`, also recorded as |got - want| against `bound` (record_tolerance): ST_EXPECT_NEAR.
inline double recorded_near(double got, double want, double bound, const char* file, int line) {
  record_tolerance(std::abs(got - want), bound, "absolute", file, line);
  return got;
}

// A result judged by the rounding it carries rather than a fixed bound: the same computation in
// float64 (`want_fp64`) shows how far the fp32 reference (`want`) lies from exact, and `got`, an
// fp32 computation of the same sums in another order, must differ from `want` by at most `bound`
// such roundings. The rounding is relative_max_diff(want, want_fp64), never under fp32's unit
// roundoff 2^-24. Compare whole tensors or curves, not single values: one value's distance from
// float64 is one sample that may happen to be nearly 0, a tensor's largest is not. Returned and
// recorded (as recorded_relative_diff does) in units of that rounding, so the tolerance table's
// margin is the margin.
inline double fp32_rounding(const at::Tensor& want, const at::Tensor& want_fp64) {
  return std::max(relative_max_diff(want, want_fp64), 0x1p-24);
}

inline double rounding_ratio(const at::Tensor& got, const at::Tensor& want, const at::Tensor& want_fp64) {
  return relative_max_diff(got, want) / fp32_rounding(want, want_fp64);
}

inline double recorded_rounding_ratio(const at::Tensor& got, const at::Tensor& want, const at::Tensor& want_fp64,
                                      double bound, const char* file, int line) {
  const double ratio = rounding_ratio(got, want, want_fp64);
  record_tolerance(ratio, bound, "fp32 roundings", file, line, fp32_rounding(want, want_fp64));
  return ratio;
}

// The bound of recorded_rounding_ratio where both sides are fp32 computations of the same values
// with sums in other orders (other rank counts, shards, micro-batches, row layouts). Each lands
// some roundings from float64; the reference's distance is the unit, and the other's is a
// distance of the same kind that may land a few times farther (another order of many rounded
// terms). Their difference is at most the sum of both distances: 50 units is 10x over five. A
// real error (a token's term lost or counted twice, a wrong shard offset, a skipped micro-batch)
// moves a result by far more: docs/testing.md gives the unit and what a lost token does.
inline constexpr double kOtherOrderRoundings = 50.0;

}  // namespace st::testing

// The relative difference of got and want, recorded against `bound` (recorded_relative_diff).
#define ST_RELATIVE_DIFF(got, want, bound, ...) \
  ::st::testing::recorded_relative_diff((got), (want), (bound), __FILE__, __LINE__, ##__VA_ARGS__)

// got's difference from want in units of the fp32 rounding want carries (recorded_rounding_ratio).
#define ST_ROUNDINGS(got, want, want_fp64, bound) \
  ::st::testing::recorded_rounding_ratio((got), (want), (want_fp64), (bound), __FILE__, __LINE__)

// EXPECT_NEAR of two computations of one value, recorded for the tolerance table (recorded_near).
#define ST_EXPECT_NEAR(got, want, bound) \
  EXPECT_NEAR(::st::testing::recorded_near((got), (want), (bound), __FILE__, __LINE__), (want), (bound))

// The global gradient norm's sum of squares in fp64 in one pass over fp32 values, against a
// double-precision reference at odd sizes (the clip factor is tested over ranks in tests/mpi).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "optim/grad_clip.h"
#include "relative_diff.h"

namespace st {
namespace {

TEST(GradClip, SumOfSquaresIsFp64ExactOnOddSizes) {
  at::manual_seed(5);
  for (const int64_t n : {int64_t{1}, int64_t{597}, int64_t{65537}, int64_t{200003}}) {
    const at::Tensor x = at::randn({n}) * 1e-3;
    at::Tensor sum = at::zeros({1}, at::kDouble);
    add_sum_of_squares(x, sum);
    const at::Tensor x64 = x.to(at::kDouble);
    ST_EXPECT_NEAR(sum.item<double>(), x64.dot(x64).item<double>(), 1e-12 * x64.dot(x64).item<double>()) << n;
  }
  EXPECT_THROW({ at::Tensor sum = at::zeros({1}, at::kDouble); add_sum_of_squares(at::ones({3}, at::kDouble), sum); },
               std::exception);
}

}  // namespace
}  // namespace st

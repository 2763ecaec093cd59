// Shared by the kernel parity tests: the largest difference relative to the reference's largest
// magnitude (both compared in fp32).
#pragma once

#include <ATen/ATen.h>

#include <algorithm>

namespace st::testing {

inline double relative_max_diff(const at::Tensor& got, const at::Tensor& want) {
  const at::Tensor want32 = want.to(at::kFloat);
  return (got.to(at::kFloat) - want32).abs().max().item<double>() / std::max(1e-12, want32.abs().max().item<double>());
}

}  // namespace st::testing

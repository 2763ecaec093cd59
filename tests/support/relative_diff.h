// Shared by the unit, MPI and cuda tiers: how far a result is from its reference, as the largest
// absolute difference over the reference's largest magnitude.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>

namespace st::testing {

// max |got - want| / max |want|, both compared in `compare_in` (the kernel parity tests compare
// in fp32, everything else in fp64).
inline double relative_max_diff(const at::Tensor& got, const at::Tensor& want, at::ScalarType compare_in = at::kDouble) {
  const at::Tensor reference = want.to(compare_in);
  return (got.to(compare_in) - reference).abs().max().item<double>() /
         std::max(1e-12, reference.abs().max().item<double>());
}

}  // namespace st::testing

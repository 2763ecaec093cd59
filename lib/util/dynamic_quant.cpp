#include "util/dynamic_quant.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace st {

at::Tensor dynamic_map(DynamicMap kind) {
  // Exponents 1e-6 .. 1, each with 2^i fraction steps (2^(i+1) unsigned), then 0 and 1
  // (bitsandbytes' arithmetic: fp32 linspace, midpoints, times the power of ten).
  const bool is_signed = kind == DynamicMap::signed_values;
  std::vector<at::Tensor> parts;
  for (int i = 0; i < 7; ++i) {
    const int64_t items = (int64_t{1} << (is_signed ? i : i + 1)) + 1;
    const at::Tensor bounds = at::linspace(0.1, 1.0, items, at::kFloat);
    const at::Tensor means = (bounds.narrow(0, 0, bounds.size(0) - 1) + bounds.narrow(0, 1, bounds.size(0) - 1)) / 2.0;
    const double power = std::pow(10.0, i - 6);
    parts.push_back(means * power);
    if (is_signed) parts.push_back(means * -power);
  }
  parts.push_back(at::tensor({0.0f, 1.0f}));
  return std::get<0>(at::cat(parts).sort());
}

uint8_t dynamic_code(const float* map, float x) {
  int pivot = 127, upper_pivot = 255, lower_pivot = 0;
  float lower = -1.0f, upper = 1.0f;
  float value = map[pivot];
  for (int step = 64; step > 0; step >>= 1) {
    if (x > value) {
      lower_pivot = pivot;
      lower = value;
      pivot += step;
    } else {
      upper_pivot = pivot;
      upper = value;
      pivot -= step;
    }
    value = map[pivot];
  }
  if (upper_pivot == 255) upper = map[upper_pivot];
  if (lower_pivot == 0) lower = map[lower_pivot];
  if (x > value) return static_cast<uint8_t>(x > (upper + value) * 0.5f ? upper_pivot : pivot);
  return static_cast<uint8_t>(x < (lower + value) * 0.5f ? lower_pivot : pivot);
}

uint8_t zero_code(DynamicMap kind) {
  static const uint8_t signed_zero = static_cast<uint8_t>((dynamic_map(DynamicMap::signed_values) == 0.0f).nonzero().item<int64_t>());
  static const uint8_t unsigned_zero = static_cast<uint8_t>((dynamic_map(DynamicMap::unsigned_values) == 0.0f).nonzero().item<int64_t>());
  return kind == DynamicMap::signed_values ? signed_zero : unsigned_zero;
}

at::Tensor dequantize_dynamic(const at::Tensor& codes, const at::Tensor& absmax, DynamicMap kind) {
  const at::Tensor values = dynamic_map(kind).to(codes.device()).index_select(0, codes.to(at::kLong));
  return values * absmax.repeat_interleave(kDynamicBlockSize).narrow(0, 0, codes.numel());
}

void quantize_dynamic_block(const float* values, int64_t n, const float* map, uint8_t* codes, float* absmax) {
  float largest = 0.0f;
  for (int64_t i = 0; i < n; ++i) largest = std::max(largest, std::fabs(values[i]));
  *absmax = largest;
  const float inverse = 1.0f / largest;  // the kernel's fp32 reciprocal
  for (int64_t i = 0; i < n; ++i) codes[i] = dynamic_code(map, values[i] * inverse);
}

}  // namespace st

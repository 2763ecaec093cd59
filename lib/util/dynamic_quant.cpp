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

namespace {

// The kernel's binary search and midpoint rule, without its branches (the comparisons are data:
// branches mispredict half the time). Its bracket ends up one code either side of the last
// pivot (or the map's end), so only the pivot is tracked.
constexpr int kFirstPivot = 127, kFirstStep = 64;

// One step of the search: x > map[pivot] as the sign of the difference (+0 when equal), so
// arithmetic, not a branch.
inline int next_pivot(const float* map, float x, int pivot, int step) {
  return pivot + (2 * static_cast<int>(std::signbit(map[pivot] - x)) - 1) * step;
}

// The code from the search's last pivot: the nearer neighbour past the midpoint, else the pivot.
inline uint8_t code_at(const float* map, float x, int pivot) {
  if (std::isnan(x)) return 0;  // where the kernel's comparisons, all false, lead
  const float value = map[pivot];
  if (x > value) {
    const int upper = std::min(pivot + 1, 255);
    return static_cast<uint8_t>(x > (map[upper] + value) * 0.5f ? upper : pivot);
  }
  const int lower = std::max(pivot - 1, 0);
  return static_cast<uint8_t>(x < (map[lower] + value) * 0.5f ? lower : pivot);
}

}  // namespace

uint8_t dynamic_code(const float* map, float x) {
  int pivot = kFirstPivot;
  for (int step = kFirstStep; step > 0; step >>= 1) pivot = next_pivot(map, x, pivot, step);
  return code_at(map, x, pivot);
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
  // Eight searches in lockstep: each is a chain of dependent loads, so interleaving them lets
  // the core overlap their latencies.
  constexpr int64_t kLanes = 32;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    float x[kLanes];
    int pivot[kLanes];
    for (int64_t l = 0; l < kLanes; ++l) {
      x[l] = values[i + l] * inverse;
      pivot[l] = kFirstPivot;
    }
    for (int step = kFirstStep; step > 0; step >>= 1) {
      for (int64_t l = 0; l < kLanes; ++l) pivot[l] = next_pivot(map, x[l], pivot[l], step);
    }
    for (int64_t l = 0; l < kLanes; ++l) codes[i + l] = code_at(map, x[l], pivot[l]);
  }
  for (; i < n; ++i) codes[i] = dynamic_code(map, values[i] * inverse);
}

}  // namespace st

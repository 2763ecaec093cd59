#include "util/dynamic_quant.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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

struct MapValues {
  std::vector<float> values;
  explicit MapValues(DynamicMap kind) {
    const at::Tensor map = dynamic_map(kind).contiguous();
    values.assign(map.data_ptr<float>(), map.data_ptr<float>() + map.numel());
  }
};

}  // namespace

const float* dynamic_map_values(DynamicMap kind) {
  static const MapValues signed_values(DynamicMap::signed_values);
  static const MapValues unsigned_values(DynamicMap::unsigned_values);
  return (kind == DynamicMap::signed_values ? signed_values : unsigned_values).values.data();
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

at::Tensor dequantize_dynamic(const at::Tensor& codes, const at::Tensor& absmax, DynamicMap kind,
                              int64_t into_first_block) {
  const at::Tensor values = dynamic_map(kind).to(codes.device()).index_select(0, codes.to(at::kLong));
  return values * absmax.repeat_interleave(kDynamicBlockSize).narrow(0, into_first_block, codes.numel());
}

namespace {

// Codes per float bucket: the top kBucketBits bits of a float's representation name a bucket of
// consecutive floats; where the search gives one code for the bucket's first and last float it
// gives that code for all between (coding to the nearest map value is monotone), so a lookup
// replaces the search. The few buckets holding a midpoint between two codes keep the search.
constexpr int kBucketBits = 20;
constexpr uint16_t kMixedBucket = 256;

struct BucketCodes {
  const float* map;
  std::vector<uint16_t> codes;  // [2^kBucketBits]: the code, or kMixedBucket

  explicit BucketCodes(DynamicMap kind) : map(dynamic_map_values(kind)), codes(size_t{1} << kBucketBits) {
    constexpr uint32_t kLowBits = (uint32_t{1} << (32 - kBucketBits)) - 1;
    for (uint32_t bucket = 0; bucket < codes.size(); ++bucket) {
      const uint32_t first = bucket << (32 - kBucketBits);
      const uint8_t low = dynamic_code(map, float_of(first));
      const uint8_t high = dynamic_code(map, float_of(first | kLowBits));
      codes[bucket] = low == high ? low : kMixedBucket;
    }
  }
  static float float_of(uint32_t bits) {
    float x;
    std::memcpy(&x, &bits, sizeof(x));
    return x;
  }
  uint8_t code(float x) const {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof(bits));
    const uint16_t known = codes[bits >> (32 - kBucketBits)];
    return known != kMixedBucket ? static_cast<uint8_t>(known) : dynamic_code(map, x);
  }
};

const BucketCodes& bucket_codes(DynamicMap kind) {
  static const BucketCodes signed_codes(DynamicMap::signed_values);
  static const BucketCodes unsigned_codes(DynamicMap::unsigned_values);
  return kind == DynamicMap::signed_values ? signed_codes : unsigned_codes;
}

}  // namespace

uint8_t dynamic_code(DynamicMap kind, float x) { return bucket_codes(kind).code(x); }

void quantize_dynamic_block(const float* values, int64_t n, DynamicMap kind, uint8_t* codes, float* absmax) {
  float largest = 0.0f;
  for (int64_t i = 0; i < n; ++i) largest = std::max(largest, std::fabs(values[i]));
  *absmax = largest;
  const float inverse = 1.0f / largest;  // the kernel's fp32 reciprocal
  const BucketCodes& table = bucket_codes(kind);
  for (int64_t i = 0; i < n; ++i) codes[i] = table.code(values[i] * inverse);
}

DynamicCoded quantize_dynamic(const at::Tensor& values, DynamicMap kind) {
  const at::Tensor x = values.to(at::kCPU, at::kFloat).contiguous();
  const int64_t n = x.numel(), blocks = (n + kDynamicBlockSize - 1) / kDynamicBlockSize;
  DynamicCoded out{at::empty({n}, at::kByte), at::empty({blocks}, at::kFloat)};
  for (int64_t block = 0; block < blocks; ++block) {
    const int64_t first = block * kDynamicBlockSize;
    quantize_dynamic_block(x.data_ptr<float>() + first, std::min(n - first, kDynamicBlockSize), kind,
                           out.codes.data_ptr<uint8_t>() + first, out.absmax.data_ptr<float>() + block);
  }
  return out;
}

}  // namespace st

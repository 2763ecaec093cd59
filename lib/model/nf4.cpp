#include "model/nf4.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "util/errors.h"

namespace st {
namespace {

at::Tensor table_of(const float (&values)[16]) { return at::tensor(at::ArrayRef<float>(values, 16), at::kFloat); }

}  // namespace

uint8_t nf4_code(float scaled) {
  uint8_t code = 0;
  for (float threshold : kNf4Thresholds) code += scaled > threshold ? 1 : 0;
  return code;
}

at::Tensor dynamic_map() {
  // Exponents 1e-6 .. 1 with 2^i fraction steps each, both signs, then 0 and 1 (bitsandbytes'
  // arithmetic: fp32 linspace, midpoints, times the power of ten).
  std::vector<at::Tensor> parts;
  for (int i = 0; i < 7; ++i) {
    const at::Tensor bounds = at::linspace(0.1, 1.0, (int64_t{1} << i) + 1, at::kFloat);
    const at::Tensor means = (bounds.narrow(0, 0, bounds.size(0) - 1) + bounds.narrow(0, 1, bounds.size(0) - 1)) / 2.0;
    const double power = std::pow(10.0, i - 6);
    parts.push_back(means * power);
    parts.push_back(means * -power);
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

QuantizedAbsmax quantize_absmax(const at::Tensor& absmax, float offset) {
  QuantizedAbsmax out;
  out.offset = offset;
  const at::Tensor shifted = (absmax.to(at::kFloat) - offset).contiguous();
  const int64_t n = shifted.numel();
  const int64_t blocks = (n + kAbsmaxBlockSize - 1) / kAbsmaxBlockSize;
  const at::Tensor map = dynamic_map().contiguous();
  out.codes = at::empty({n}, at::kByte);
  out.absmax = at::empty({blocks}, at::kFloat);
  const float* x = shifted.data_ptr<float>();
  const float* values = map.data_ptr<float>();
  uint8_t* codes = out.codes.data_ptr<uint8_t>();
  float* scales = out.absmax.data_ptr<float>();
  for (int64_t block = 0; block < blocks; ++block) {
    const int64_t first = block * kAbsmaxBlockSize, end = std::min(n, first + kAbsmaxBlockSize);
    float largest = 0.0f;
    for (int64_t i = first; i < end; ++i) largest = std::max(largest, std::fabs(x[i]));
    scales[block] = largest;
    const float inverse = 1.0f / largest;  // the kernel's fp32 reciprocal
    for (int64_t i = first; i < end; ++i) codes[i] = dynamic_code(values, x[i] * inverse);
  }
  return out;
}

at::Tensor dequantize_absmax(const QuantizedAbsmax& q) {
  const at::Tensor values = dynamic_map().to(q.codes.device()).index_select(0, q.codes.to(at::kLong));
  const at::Tensor scale = q.absmax.repeat_interleave(kAbsmaxBlockSize).narrow(0, 0, q.codes.numel());
  return values * scale + q.offset;
}

Nf4Tensor nf4_quantize(const at::Tensor& weights) {
  if (!weights.is_floating_point()) throw ModelError("nf4: weights must be floating point");
  Nf4Tensor out;
  out.numel = weights.numel();
  const int64_t blocks = nf4_blocks(out.numel);
  at::Tensor flat = weights.reshape({-1}).to(at::kFloat);
  if (blocks * kNf4BlockSize != out.numel) flat = at::constant_pad_nd(flat, {0, blocks * kNf4BlockSize - out.numel}, 0);
  const at::Tensor grid = flat.view({blocks, kNf4BlockSize});
  out.absmax = grid.abs().amax(1).contiguous();
  const at::Tensor scaled = grid * at::reciprocal(out.absmax).unsqueeze(1);  // fp32 1 / absmax, as the kernel
  const at::Tensor thresholds = at::tensor(at::ArrayRef<float>(kNf4Thresholds, 15), scaled.options());
  const at::Tensor codes = scaled.reshape({-1, 1}).gt(thresholds).sum(1).to(at::kByte);  // [blocks * 64]
  const at::Tensor pairs = codes.view({-1, 2});
  out.codes = pairs.select(1, 0).mul(16).add(pairs.select(1, 1));  // the earlier element high
  out.codes = out.codes.narrow(0, 0, (out.numel + 1) / 2).contiguous();
  return out;
}

at::Tensor nf4_dequantize(const Nf4Tensor& q, at::ScalarType dtype) {
  const at::Tensor bytes = q.codes.to(at::kLong);
  const at::Tensor codes = at::stack({bytes.div(16, "floor"), bytes.remainder(16)}, 1).reshape({-1});
  const at::Tensor values = table_of(kNf4Codes).to(q.absmax.device()).index_select(0, codes.narrow(0, 0, q.numel));
  const at::Tensor scale = q.absmax.repeat_interleave(kNf4BlockSize).narrow(0, 0, q.numel);
  return (values * scale).to(dtype);
}

}  // namespace st

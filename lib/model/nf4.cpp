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

QuantizedAbsmax quantize_absmax(const at::Tensor& absmax, float offset) {
  QuantizedAbsmax out;
  out.offset = offset;
  DynamicCoded coded = quantize_dynamic(absmax.to(at::kFloat) - offset, DynamicMap::signed_values);
  out.codes = coded.codes;
  out.absmax = coded.absmax;
  return out;
}

at::Tensor dequantize_absmax(const QuantizedAbsmax& q) {
  return dequantize_dynamic(q.codes, q.absmax, DynamicMap::signed_values) + q.offset;
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

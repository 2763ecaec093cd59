// NF4 against its published definition (QLoRA; bitsandbytes' create_normal_map, dQuantizeNF4,
// kQuantizeBlockwise): the code table from the normal quantiles, the tree's thresholds as the
// table's midpoints, block absmax, nibble order and zero-padded tails on odd shapes, the
// vectorised path equal to a per-element reading of the kernel, sharded quantization equal to
// the whole tensor's bytes, and the round trip within half a grid step.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/nf4.h"

namespace st {
namespace {

// Inverse of the standard normal CDF by Newton steps on 0.5 erfc(-x / sqrt 2).
double normal_quantile(double p) {
  double x = 0.0;
  for (int i = 0; i < 100; ++i) {
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
    x -= (cdf - p) / pdf;
  }
  return x;
}

TEST(Nf4, CodeTableIsTheNormalQuantilesOfTheDefinition) {
  const double offset = 0.9677083;  // bitsandbytes' create_normal_map default
  std::vector<double> values{0.0};
  for (int i = 0; i < 8; ++i) values.push_back(normal_quantile(offset + i * (0.5 - offset) / 8));
  for (int i = 0; i < 7; ++i) values.push_back(-normal_quantile(offset + i * (0.5 - offset) / 7));
  std::sort(values.begin(), values.end());
  for (double& v : values) v /= values.back();
  for (int k = 0; k < 16; ++k) EXPECT_NEAR(kNf4Codes[k], values[k], 2e-6) << "code " << k;
}

TEST(Nf4, ThresholdsAreTheTablesMidpointsAndRoundToNearest) {
  for (int k = 0; k < 15; ++k) {
    EXPECT_NEAR(kNf4Thresholds[k], (kNf4Codes[k] + kNf4Codes[k + 1]) / 2.0, 1e-7) << "threshold " << k;
  }
  for (int k = 0; k < 16; ++k) EXPECT_EQ(nf4_code(kNf4Codes[k]), k);
  EXPECT_EQ(nf4_code(kNf4Thresholds[7]), 7);  // a tie goes down: the tree tests x > threshold
  EXPECT_EQ(nf4_code(std::nextafter(kNf4Thresholds[7], 1.0f)), 8);
  EXPECT_EQ(nf4_code(NAN), 0);  // an all-zero block scales 0 by 1 / 0 in the kernel
}

TEST(Nf4, NibbleOrderBlockAbsmaxAndTheZeroPaddedTail) {
  const Nf4Tensor q = nf4_quantize(at::tensor({2.0f, -2.0f, 0.0f}));
  ASSERT_EQ(q.numel, 3);
  ASSERT_EQ(q.codes.numel(), 2);
  EXPECT_EQ(q.codes[0].item<uint8_t>(), 0xF0);  // 1.0 -> 15 high, -1.0 -> 0 low
  EXPECT_EQ(q.codes[1].item<uint8_t>(), 0x77);  // 0 -> 7, then the padding's 0 -> 7
  EXPECT_EQ(q.absmax.item<float>(), 2.0f);
  const at::Tensor two_blocks = at::cat({at::full({64}, 0.5f), at::full({6}, -3.0f)});
  const Nf4Tensor r = nf4_quantize(two_blocks);
  EXPECT_EQ(r.codes.numel(), 35);
  EXPECT_TRUE(r.absmax.equal(at::tensor({0.5f, 3.0f})));
}

// The kernel read element by element: fp32 absmax per block, its fp32 reciprocal, the tree.
std::vector<uint8_t> quantize_like_the_kernel(const at::Tensor& weights, std::vector<float>& absmax) {
  const at::Tensor flat = weights.reshape({-1}).to(at::kFloat).contiguous();
  const float* w = flat.data_ptr<float>();
  const int64_t n = flat.numel();
  std::vector<uint8_t> codes;
  for (int64_t block = 0; block * kNf4BlockSize < n; ++block) {
    float largest = 0.0f;
    for (int64_t i = block * kNf4BlockSize; i < std::min(n, (block + 1) * kNf4BlockSize); ++i) {
      largest = std::max(largest, std::fabs(w[i]));
    }
    absmax.push_back(largest);
    const float inverse = 1.0f / largest;
    for (int64_t i = block * kNf4BlockSize; i < std::min(n, (block + 1) * kNf4BlockSize); ++i) {
      codes.push_back(nf4_code(w[i] * inverse));
    }
  }
  if (n % 2) codes.push_back(nf4_code(0.0f * (1.0f / absmax.back())));
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i < codes.size(); i += 2) bytes.push_back(static_cast<uint8_t>(codes[i] << 4 | codes[i + 1]));
  return bytes;
}

TEST(Nf4, EqualsTheKernelElementByElementOnOddShapes) {
  at::manual_seed(5);
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    at::Tensor weights = (at::randn({597, 43}) * 0.02).to(dtype);
    // An all-zero block: the CUDA kernel scales 0 by 1 / 0 (NaN, code 0) where bitsandbytes'
    // CPU backend clamps the absmax (code 7); both restore zeros. The bytes follow the kernel.
    weights.view({-1}).narrow(0, 3 * kNf4BlockSize, kNf4BlockSize).zero_();
    std::vector<float> absmax;
    const std::vector<uint8_t> expected = quantize_like_the_kernel(weights, absmax);
    const Nf4Tensor q = nf4_quantize(weights);
    ASSERT_EQ(q.codes.numel(), static_cast<int64_t>(expected.size()));
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), q.codes.data_ptr<uint8_t>())) << c10::toString(dtype);
    EXPECT_TRUE(std::equal(absmax.begin(), absmax.end(), q.absmax.data_ptr<float>()));
    EXPECT_EQ(q.codes[3 * kNf4BlockSize / 2].item<uint8_t>(), 0x00);
    EXPECT_TRUE(nf4_dequantize(q, at::kFloat).narrow(0, 3 * kNf4BlockSize, kNf4BlockSize).eq(0).all().item<bool>());
  }
}

TEST(Nf4, BlockAlignedShardsQuantizeToTheWholeTensorsBytes) {
  at::manual_seed(7);
  const at::Tensor whole = at::randn({kNf4BlockSize * 37 + 5});
  const Nf4Tensor expected = nf4_quantize(whole);
  for (int ranks = 1; ranks <= 4; ++ranks) {
    const int64_t blocks = (whole.numel() + kNf4BlockSize - 1) / kNf4BlockSize;
    const int64_t chunk = (blocks + ranks - 1) / ranks * kNf4BlockSize;
    std::vector<at::Tensor> codes, absmax;
    for (int rank = 0; rank < ranks; ++rank) {
      const int64_t first = std::min<int64_t>(rank * chunk, whole.numel());
      const Nf4Tensor part = nf4_quantize(whole.narrow(0, first, std::min(chunk, whole.numel() - first)));
      codes.push_back(part.codes);
      absmax.push_back(part.absmax);
    }
    EXPECT_TRUE(at::cat(codes).equal(expected.codes)) << ranks << " ranks";
    EXPECT_TRUE(at::cat(absmax).equal(expected.absmax)) << ranks << " ranks";
  }
}

TEST(Nf4, RoundTripStaysWithinHalfAGridStep) {
  at::manual_seed(11);
  const at::Tensor weights = at::randn({1000, 33});
  const Nf4Tensor q = nf4_quantize(weights);
  const at::Tensor restored = nf4_dequantize(q, at::kFloat);
  ASSERT_EQ(restored.numel(), weights.numel());
  float widest = 0.0f;
  for (int k = 0; k < 15; ++k) widest = std::max(widest, kNf4Codes[k + 1] - kNf4Codes[k]);
  const at::Tensor scale = q.absmax.repeat_interleave(kNf4BlockSize).narrow(0, 0, weights.numel());
  const at::Tensor error = (restored - weights.reshape({-1})).abs();
  EXPECT_TRUE(error.le(scale * (widest / 2) * (1 + 1e-5)).all().item<bool>()) << error.max().item<float>();
  EXPECT_GT(error.max().item<float>(), 0.0f);  // 4 bits do lose something
  // Each block's largest magnitude is a code (+-1 x absmax) and comes back exactly.
  const int64_t pad = (kNf4BlockSize - weights.numel() % kNf4BlockSize) % kNf4BlockSize;
  const at::Tensor blocks = at::constant_pad_nd(weights.reshape({-1}), {0, pad}, 0).view({-1, kNf4BlockSize});
  const at::Tensor back = at::constant_pad_nd(restored, {0, pad}, 0).view({-1, kNf4BlockSize});
  const at::Tensor at_max = blocks.abs().argmax(1, true);
  EXPECT_TRUE(blocks.gather(1, at_max).equal(back.gather(1, at_max)));
  EXPECT_TRUE(nf4_dequantize(q, at::kBFloat16).equal(restored.to(at::kBFloat16)));
}

// Values of bitsandbytes' create_dynamic_map(signed=True), computed by its Python definition
// with torch 1.13's fp32 linspace.
TEST(Nf4DoubleQuant, DynamicMapIsTheDefinitions) {
  const at::Tensor map = dynamic_map();
  ASSERT_EQ(map.numel(), 256);
  const auto v = [&](int64_t i) { return map[i].item<float>(); };
  EXPECT_EQ(v(0), -0.992968738079071f);
  EXPECT_EQ(v(1), -0.9789062142372131f);
  EXPECT_EQ(v(100), -0.0074687497690320015f);
  EXPECT_EQ(v(127), 0.0f);
  EXPECT_EQ(v(128), 5.500000384017767e-07f);
  EXPECT_EQ(v(140), 0.0007187500596046448f);
  EXPECT_EQ(v(200), 0.23359376192092896f);
  EXPECT_EQ(v(250), 0.9367187023162842f);
  EXPECT_EQ(v(254), 0.992968738079071f);
  EXPECT_EQ(v(255), 1.0f);
  EXPECT_TRUE(map.equal(std::get<0>(map.sort())));
}

TEST(Nf4DoubleQuant, TheKernelsSearchFindsTheNearestValue) {
  const at::Tensor map = dynamic_map().contiguous();
  const float* values = map.data_ptr<float>();
  for (int64_t k = 0; k < 256; ++k) EXPECT_EQ(values[dynamic_code(values, values[k])], values[k]) << k;
  at::manual_seed(3);
  const at::Tensor xs = at::cat({at::rand({2000}) * 2 - 1, (at::rand({2000}) * 2 - 1) * 1e-3}).contiguous();
  for (int64_t i = 0; i < xs.numel(); ++i) {
    const float x = xs.data_ptr<float>()[i];
    const float chosen = std::fabs(x - values[dynamic_code(values, x)]);
    float nearest = 2.0f;
    for (int64_t k = 0; k < 256; ++k) nearest = std::min(nearest, std::fabs(x - values[k]));
    EXPECT_LE(chosen, nearest * (1 + 1e-6f)) << "x = " << x;
  }
}

TEST(Nf4DoubleQuant, AbsmaxRoundTripAndShardsAgainstOneOffset) {
  at::manual_seed(13);
  const Nf4Tensor q = nf4_quantize(at::randn({kNf4BlockSize * 600 + 9}) * 0.02);
  const float offset = q.absmax.mean().item<float>();
  const QuantizedAbsmax whole = quantize_absmax(q.absmax, offset);
  ASSERT_EQ(whole.codes.numel(), q.absmax.numel());
  ASSERT_EQ(whole.absmax.numel(), 3);
  const at::Tensor restored = dequantize_absmax(whole);
  const at::Tensor scale = whole.absmax.repeat_interleave(kAbsmaxBlockSize).narrow(0, 0, q.absmax.numel());
  // Half the dynamic map's widest gap (between 0.9 and 1: 0.9 / 64 wide) of each block's scale.
  EXPECT_TRUE((restored - q.absmax).abs().le(scale * 0.0071f + 1e-9f).all().item<bool>());
  EXPECT_LT(((restored - q.absmax).abs() / q.absmax).max().item<float>(), 0.05f);
  std::vector<at::Tensor> codes;
  for (int64_t first = 0; first < q.absmax.numel(); first += 2 * kAbsmaxBlockSize) {
    const int64_t count = std::min<int64_t>(2 * kAbsmaxBlockSize, q.absmax.numel() - first);
    codes.push_back(quantize_absmax(q.absmax.narrow(0, first, count), offset).codes);
  }
  EXPECT_TRUE(at::cat(codes).equal(whole.codes));
}

}  // namespace
}  // namespace st

// cuda/'s NF4 dequantization against the libtorch path it replaces (lib/fsdp/quantized_base.cpp),
// bit for bit: a decoder layer's gathered shards of 1-3 ranks with odd weight shapes (partial
// last blocks), fp32 or 8-bit absmax, into fp32, bf16 and fp16. Skipped without a GPU and a CUDA
// libtorch.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <string>

#include "fsdp/quantized_base.h"
#include "hf/presets.h"
#include "model/nf4.h"
#include "odd_quantized_config.h"

namespace st {
namespace {

using st::testing::odd_quantized_config;

// Any bytes are a valid gathered unit: random codes and dense values, positive absmax values
// (fp32 or 8-bit codes with random per-weight statistics).
QuantizedUnit random_unit(int group, bool double_quant, at::Tensor& gathered) {
  QuantizedUnit unit;
  unit.layout = build_quantized_unit_layout(build_unit_layouts(odd_quantized_config(), group)[1], group, double_quant,
                                            at::kBFloat16);
  const QuantizedUnitLayout& q = unit.layout;
  at::manual_seed(11 + group);
  gathered = at::randint(0, 256, {group, q.shard_bytes}, at::kByte);
  if (!double_quant) {
    gathered.narrow(1, q.absmax_begin, q.shard_blocks() * 4).view(at::kFloat).uniform_(0.01, 2.0);
    unit.statistics.nested_absmax = at::empty({0}, at::kFloat);  // as a unit gathered without it holds
  } else {
    int64_t nested = 0;
    for (const ParamSlot& slot : q.blocks.params) {
      nested += (nf4_blocks(slot.spec.numel()) + kAbsmaxBlockSize - 1) / kAbsmaxBlockSize;
      unit.statistics.offsets.push_back(0.05f * static_cast<float>(unit.statistics.offsets.size() + 1));
    }
    unit.statistics.nested_absmax = at::rand({nested}, at::kFloat) + 0.1;
  }
  gathered.narrow(1, q.dense_begin, q.dense_bytes()).view(at::kBFloat16).normal_();
  gathered = gathered.reshape({-1});
  return unit;
}

TEST(Nf4DequantizeKernel, EqualsTheLibtorchPathBitForBit) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  for (const int group : {1, 2, 3}) {
    for (const bool double_quant : {false, true}) {
      at::Tensor gathered;
      const QuantizedUnit on_host = random_unit(group, double_quant, gathered);
      QuantizedUnit on_gpu = on_host;
      on_gpu.statistics.nested_absmax = on_host.statistics.nested_absmax.cuda();
      for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
        const std::string where = std::to_string(group) + " rank(s), " + (double_quant ? "8-bit" : "fp32") +
                                  " absmax, " + c10::toString(dtype);
        const at::Tensor want = dequantize_unit_reference(on_host, gathered, dtype);
        const at::Tensor got = dequantize_unit(on_gpu, gathered.cuda(), dtype).cpu();
        ASSERT_EQ(got.scalar_type(), dtype) << where;
        ASSERT_EQ(got.numel(), on_host.layout.bound.padded_numel) << where;
        EXPECT_TRUE(at::equal(got.view(c10::elementSize(dtype) == 4 ? at::kInt : at::kShort),
                              want.view(c10::elementSize(dtype) == 4 ? at::kInt : at::kShort)))
            << where << ": max difference " << (got.to(at::kFloat) - want.to(at::kFloat)).abs().max().item<float>();
      }
    }
  }
}

}  // namespace
}  // namespace st

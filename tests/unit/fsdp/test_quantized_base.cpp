// QLoRA's quantized unit layout: projection weights on block boundaries with room for their
// partial last block, the rest packed after them, shards of whole blocks, aligned byte
// sections; double quantization codes each weight's absmax against that weight's own mean.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "fsdp/quantized_base.h"
#include "hf/presets.h"
#include "model/nf4.h"
#include "odd_quantized_config.h"

namespace st {
namespace {

using st::testing::odd_quantized_config;

TEST(QuantizedUnitLayout, ProjectionsStartOnBlocksAndShardsAreWholeBlocks) {
  const ModelConfig config = odd_quantized_config();
  for (int group : {1, 2, 3, 4}) {
    const UnitLayout unit = build_unit_layouts(config, group)[1];  // layer 0
    for (bool double_quant : {false, true}) {
      const QuantizedUnitLayout q = build_quantized_unit_layout(unit, group, double_quant, at::kBFloat16);
      ASSERT_EQ(q.blocks.params.size(), 7u);
      ASSERT_EQ(q.bound.params.size(), unit.params.size());
      int64_t end = 0;
      for (const ParamSlot& slot : q.blocks.params) {
        EXPECT_TRUE(is_projection_weight(slot.spec.key)) << slot.spec.name;
        EXPECT_EQ(slot.offset, end) << slot.spec.name;  // the previous one's blocks end here
        EXPECT_EQ(slot.offset % kNf4BlockSize, 0) << slot.spec.name;
        end = slot.offset + nf4_blocks(slot.spec.numel()) * kNf4BlockSize;
      }
      EXPECT_EQ(q.blocks.numel, end);
      EXPECT_EQ(q.blocks.shard_numel % kNf4BlockSize, 0);
      EXPECT_EQ(q.blocks.shard_numel * group, q.blocks.padded_numel);
      EXPECT_GE(q.blocks.padded_numel, end);
      EXPECT_LT(q.blocks.padded_numel - end, kNf4BlockSize * group);
      EXPECT_EQ(q.total_blocks(), q.shard_blocks() * group);
      for (const ParamSlot& slot : q.dense.params) EXPECT_FALSE(is_projection_weight(slot.spec.key)) << slot.spec.name;
      for (size_t i = q.blocks.params.size(); i < q.bound.params.size(); ++i) {
        const ParamSlot& slot = q.bound.params[i];
        EXPECT_EQ(slot.offset, q.blocks.padded_numel + q.dense.params[i - q.blocks.params.size()].offset);
      }
      EXPECT_EQ(q.bound.padded_numel, q.blocks.padded_numel + q.dense.padded_numel);
      // Sections: codes, absmax, the dense shard in bf16, each 16-byte aligned, in order.
      EXPECT_EQ(q.absmax_begin % 16, 0);
      EXPECT_EQ(q.dense_begin % 16, 0);
      EXPECT_GE(q.absmax_begin, q.shard_blocks() * kNf4BlockSize / 2);
      EXPECT_GE(q.dense_begin, q.absmax_begin + q.shard_blocks() * (double_quant ? 1 : 4));
      EXPECT_GE(q.shard_bytes, q.dense_begin + q.dense.shard_numel * 2);
      EXPECT_EQ(q.shard_bytes % 16, 0);
    }
  }
}

TEST(QuantizedUnitLayout, EmbeddingAndHeadHoldNoBlocks) {
  const ModelConfig config = odd_quantized_config();
  const std::vector<UnitLayout> units = build_unit_layouts(config, 2);
  for (const UnitLayout& unit : {units.front(), units.back()}) {
    const QuantizedUnitLayout q = build_quantized_unit_layout(unit, 2, true, at::kFloat);
    EXPECT_TRUE(q.blocks.params.empty()) << unit.name;
    EXPECT_EQ(q.shard_blocks(), 0) << unit.name;
    EXPECT_EQ(q.dense.numel, unit.numel) << unit.name;
    EXPECT_EQ(q.dense_begin, 0) << unit.name;
  }
}

TEST(DoubleQuantize, EachWeightAgainstItsOwnMean) {
  const ModelConfig config = odd_quantized_config();
  const QuantizedUnitLayout q = build_quantized_unit_layout(build_unit_layouts(config, 3)[1], 3, true, at::kFloat);
  const at::Tensor absmax = at::rand({q.total_blocks()}, at::make_generator<at::CPUGeneratorImpl>(3)) * 0.2;
  const DoubleQuantized quantized = double_quantize(q, absmax);
  ASSERT_EQ(quantized.statistics.offsets.size(), q.blocks.params.size());
  int64_t nested_first = 0;
  for (size_t i = 0; i < q.blocks.params.size(); ++i) {
    const ParamSlot& slot = q.blocks.params[i];
    const int64_t first = slot.offset / kNf4BlockSize, count = nf4_blocks(slot.spec.numel());
    const at::Tensor part = absmax.narrow(0, first, count);
    const auto mean = static_cast<float>(part.to(at::kDouble).mean().item<double>());
    EXPECT_EQ(quantized.statistics.offsets[i], mean) << slot.spec.name;
    const QuantizedAbsmax alone = quantize_absmax(part, mean);
    EXPECT_TRUE(at::equal(quantized.codes.narrow(0, first, count), alone.codes)) << slot.spec.name;
    EXPECT_TRUE(at::equal(quantized.statistics.nested_absmax.narrow(0, nested_first, alone.absmax.numel()), alone.absmax));
    nested_first += alone.absmax.numel();
  }
  EXPECT_EQ(quantized.statistics.nested_absmax.numel(), nested_first);
}

}  // namespace
}  // namespace st

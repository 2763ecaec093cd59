// Adapter units and the merged export's per-shard merge: every rank of a group merges only its
// slice (pieces of weights cut mid-row included), and the slices together equal W + scale B A.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "fsdp/adapter_merge.h"
#include "fsdp/unit_shards.h"
#include "hf/model_weights.h"
#include "hf/presets.h"

namespace st {
namespace {

TEST(AdapterUnits, LayersHoldThePairsAndTheOtherUnitsOnePaddingElementPerRank) {
  const ModelConfig config = preset_config("debug");
  const auto units = build_adapter_unit_layouts(config, {LoraTarget::q, LoraTarget::up}, 8, 3);
  ASSERT_EQ(units.size(), static_cast<size_t>(config.num_hidden_layers + 2));
  EXPECT_EQ(units.front().name, "embedding");
  EXPECT_EQ(units.front().numel, 0);
  EXPECT_EQ(units.front().shard_numel, 1);
  EXPECT_EQ(units.back().padded_numel, 3);
  const UnitLayout& layer = units[1];
  EXPECT_EQ(layer.name, "layer.0");
  ASSERT_EQ(layer.params.size(), 4u);
  EXPECT_EQ(layer.numel, 8 * config.hidden_size + config.q_size() * 8 + 8 * config.hidden_size +
                             config.intermediate_size * 8);
  EXPECT_EQ(layer.padded_numel % 3, 0);
}

TEST(AdapterMerge, ShardsTogetherEqualTheDenseMerge) {
  const ModelConfig config = preset_config("debug");
  const std::vector<LoraTarget> targets = lora_targets("k,o,down");
  const double scale = 0.75;
  const int group = 3;
  at::manual_seed(4);
  TensorMap adapters;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    for (const ParamSpec& spec : lora_layer_params(config, layer, targets, 4)) adapters[spec.name] = at::randn(spec.shape);
  }
  const auto units = build_unit_layouts(config, group);
  std::vector<std::vector<at::Tensor>> shards(group);
  for (int rank = 0; rank < group; ++rank) {
    for (const UnitLayout& unit : units) shards[rank].push_back(init_unit_shard(unit, rank, 9));
    merge_adapters_into_shards(units, shards[rank], rank, adapters, scale);
  }
  const TensorMap base = init_preset_weights(config, 9, at::kFloat);
  for (size_t u = 1; u + 1 < units.size(); ++u) {
    std::vector<at::Tensor> parts;
    for (int rank = 0; rank < group; ++rank) parts.push_back(shards[rank][u]);
    const at::Tensor flat = at::cat(parts);
    const auto layer = static_cast<int64_t>(u) - 1;
    for (const ParamSlot& slot : units[u].params) {
      at::Tensor expected = base.at(slot.spec.name);
      for (LoraTarget target : targets) {
        if (adapted_weight_name(layer, target) != slot.spec.name) continue;
        expected = expected + adapters.at(lora_b_name(layer, target)).mm(adapters.at(lora_a_name(layer, target))) * scale;
      }
      const at::Tensor got = flat.narrow(0, slot.offset, slot.spec.numel()).view(slot.spec.shape);
      EXPECT_TRUE(at::allclose(got, expected, 1e-6, 1e-6)) << slot.spec.name;
    }
  }
}

}  // namespace
}  // namespace st

// Adapter units and the merged export's per-shard merge: every rank of a group merges only its
// slice (pieces of weights cut mid-row included), and the slices together equal W + scale B A.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "fsdp/adapter_merge.h"
#include "model/llama_units.h"
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

// Random pairs of `targets` (rank r) for every layer; each rank of a group of `group` merges them
// into its shard of `config`'s seeded weights; returns the units' shards joined, per unit.
struct Merged {
  TensorMap adapters;
  std::vector<UnitLayout> units;
  std::vector<at::Tensor> flat;  // per unit, the ranks' shards joined
};
Merged merged_by_shards(const ModelConfig& config, const std::vector<LoraTarget>& targets, int64_t r, int group,
                        double scale) {
  Merged m;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    for (const ParamSpec& spec : lora_layer_params(config, layer, targets, r)) m.adapters[spec.name] = at::randn(spec.shape);
  }
  m.units = build_unit_layouts(config, group);
  std::vector<std::vector<at::Tensor>> shards(group);
  for (int rank = 0; rank < group; ++rank) {
    for (const UnitLayout& unit : m.units) shards[rank].push_back(init_unit_shard(unit, rank, 9));
    merge_adapters_into_shards(config, m.units, shards[rank], rank, m.adapters, scale);
  }
  for (size_t u = 0; u < m.units.size(); ++u) {
    std::vector<at::Tensor> parts;
    for (int rank = 0; rank < group; ++rank) parts.push_back(shards[rank][u]);
    m.flat.push_back(at::cat(parts));
  }
  return m;
}

TEST(AdapterMerge, ShardsTogetherEqualTheDenseMerge) {
  const ModelConfig config = preset_config("debug");
  const std::vector<LoraTarget> targets = lora_targets("k,o,down");
  const double scale = 0.75;
  at::manual_seed(4);
  const Merged m = merged_by_shards(config, targets, 4, 3, scale);
  const TensorMap& adapters = m.adapters;
  const TensorMap base = init_preset_weights(config, 9, at::kFloat);
  for (size_t u = 1; u + 1 < m.units.size(); ++u) {
    const at::Tensor& flat = m.flat[u];
    const auto layer = static_cast<int64_t>(u) - 1;
    for (const ParamSlot& slot : m.units[u].params) {
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

// A mixture-of-experts model's stacked pairs (PEFT's target_parameters): each expert's gate, up
// and down merged with its own slice, written here from PEFT's layout (A's rows [e r, (e + 1) r),
// B's columns e, e + E, ...; gate_up's B rows: the gate's, then the up's; gate_up's rank 2 r).
TEST(AdapterMerge, ShardsTogetherEqualEachExpertsMergeAsPeftSlicesTheStackedPairs) {
  const ModelConfig config = preset_config("debug-moe");
  const std::vector<LoraTarget> targets = lora_targets("q,gate,up,down");
  const double scale = 0.5;
  const int64_t experts = config.experts.num_experts, width = config.experts.expert_intermediate_size;
  at::manual_seed(5);
  const Merged m = merged_by_shards(config, targets, 2, 3, scale);
  const TensorMap& adapters = m.adapters;
  const TensorMap base = init_preset_weights(config, 9, at::kFloat);
  const std::string block = "base_model.model.model.layers.0.mlp.experts.";
  const auto slice = [&](const std::string& pair, int64_t e) {
    const at::Tensor& a = adapters.at(pair + "lora_A.weight");
    const int64_t rank = a.size(0) / experts;  // gate_up's 2 r, down's r
    const at::Tensor columns = at::arange(e, rank * experts, experts, at::kLong);
    return adapters.at(pair + "lora_B.weight").index_select(1, columns).mm(a.narrow(0, e * rank, rank));
  };
  const size_t holder = experts_unit_of(config, 0);  // layer 0: sparse, its experts in a unit of their own
  ASSERT_GT(holder, 0u);
  const at::Tensor& flat = m.flat[holder];
  int checked = 0;
  for (const ParamSlot& slot : m.units[holder].params) {
    at::Tensor expected = base.at(slot.spec.name);
    const int64_t e = slot.spec.key.expert;
    switch (slot.spec.key.member) {
      case LayerParam::expert_gate: expected = expected + slice(block + "base_layer.", e).narrow(0, 0, width) * scale; break;
      case LayerParam::expert_up: expected = expected + slice(block + "base_layer.", e).narrow(0, width, width) * scale; break;
      case LayerParam::expert_down: expected = expected + slice(block, e) * scale; break;
      default: continue;
    }
    ++checked;
    const at::Tensor got = flat.narrow(0, slot.offset, slot.spec.numel()).view(slot.spec.shape);
    EXPECT_TRUE(at::allclose(got, expected, 1e-6, 1e-6)) << slot.spec.name;
  }
  EXPECT_EQ(checked, 3 * experts);
}

}  // namespace
}  // namespace st

// FSDP unit geometry and per-rank shards: every rank count tiles each flat unit exactly, shards
// read from safetensors (only the owned ranges) or initialised from a preset reassemble into the
// whole-model tensors bit for bit.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "fsdp/unit_shards.h"
#include "model/llama_units.h"
#include "model/model_source.h"
#include "hf/model_weights.h"
#include "hf/presets.h"

namespace st {
namespace {

// The unit's parameters concatenated in HF order, padded with zeros: what the shards must tile.
at::Tensor expected_flat(const UnitLayout& unit, const TensorMap& tensors) {
  std::vector<at::Tensor> parts;
  for (const ParamSlot& slot : unit.params) parts.push_back(tensors.at(slot.spec.name).reshape({-1}).to(at::kFloat));
  parts.push_back(at::zeros({unit.padded_numel - unit.numel}));
  return at::cat(parts);
}

TEST(UnitLayout, UnitsTileTheModelForEveryGroupSize) {
  const ModelConfig config = preset_config("debug");
  for (int group = 1; group <= 5; ++group) {
    const auto units = build_unit_layouts(config, group);
    ASSERT_EQ(units.size(), static_cast<size_t>(config.num_hidden_layers + 2));
    EXPECT_EQ(units.front().name, "embedding");
    EXPECT_EQ(units[1].name, "layer.0");
    EXPECT_EQ(units.back().name, "head");
    int64_t total = 0;
    for (const UnitLayout& unit : units) {
      int64_t expected_offset = 0;
      for (const ParamSlot& slot : unit.params) {
        EXPECT_EQ(slot.offset, expected_offset) << unit.name << " " << slot.spec.name;
        expected_offset += slot.spec.numel();
      }
      EXPECT_EQ(unit.numel, expected_offset);
      EXPECT_EQ(unit.padded_numel % group, 0);
      EXPECT_LT(unit.padded_numel - unit.numel, group);
      EXPECT_EQ(unit.shard_numel * group, unit.padded_numel);
      total += unit.numel;
    }
    EXPECT_EQ(total, config.parameter_count());
  }
  ModelConfig tied = config;
  tied.tie_word_embeddings = true;
  const auto head = build_unit_layouts(tied, 2).back();
  ASSERT_EQ(head.params.size(), 1u);
  EXPECT_EQ(head.params[0].spec.name, model_param_name(ModelParam::final_norm));
}

// A mixture-of-experts model: the units run in order (embedding, layers, head), then one unit of
// experts per sparse layer, which its layer runs with; the dense layer has none. Every parameter
// lies in exactly one unit.
TEST(UnitLayout, EachSparseLayersExpertsAreAUnitItsLayerRunsWith) {
  const ModelConfig config = preset_config("debug-moe");
  const auto units = build_unit_layouts(config, 4);
  ASSERT_EQ(units.size(), unit_count(config));
  ASSERT_EQ(run_unit_count(config), static_cast<size_t>(config.num_hidden_layers + 2));
  EXPECT_EQ(units[run_unit_count(config) - 1].name, "head");
  int64_t total = 0;
  for (const UnitLayout& unit : units) total += unit.numel;
  EXPECT_EQ(total, config.parameter_count());
  int sparse = 0;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    const auto with = units_run_with(config, static_cast<size_t>(layer + 1));
    if (!config.sparse_layer(layer)) {
      EXPECT_EQ(with, std::vector<size_t>{static_cast<size_t>(layer + 1)});
      EXPECT_EQ(experts_unit_of(config, layer), 0u);
      continue;
    }
    const size_t experts = experts_unit_of(config, layer);
    EXPECT_EQ(experts, run_unit_count(config) + static_cast<size_t>(sparse++));
    EXPECT_EQ(with, (std::vector<size_t>{static_cast<size_t>(layer + 1), experts}));
    EXPECT_EQ(unit_role(config, experts), UnitRole::experts);
    EXPECT_EQ(units[experts].name, "layer." + std::to_string(layer) + ".experts");
    EXPECT_EQ(units[experts].params.size(), static_cast<size_t>(3 * config.experts.num_experts));
    for (const ParamSlot& slot : units[layer + 1].params) EXPECT_LT(slot.spec.key.expert, 0) << slot.spec.name;
  }
  EXPECT_EQ(sparse, config.sparse_layer_count());
  EXPECT_LT(sparse, config.num_hidden_layers);  // the preset has a dense layer too
}

// adamw8bit's geometry: every shard whole blocks of 256 (a block never spans two ranks), the
// padding less than one block per rank; the adapters' empty units too.
TEST(UnitLayout, ShardsAreWholeMultiplesWhenAsked) {
  const ModelConfig config = preset_config("debug");
  for (int group = 1; group <= 5; ++group) {
    const auto plain = build_unit_layouts(config, group);
    const auto blocked = build_unit_layouts(config, group, 256);
    ASSERT_EQ(plain.size(), blocked.size());
    for (size_t u = 0; u < blocked.size(); ++u) {
      const UnitLayout& unit = blocked[u];
      EXPECT_EQ(unit.numel, plain[u].numel);
      EXPECT_EQ(unit.shard_numel % 256, 0) << unit.name << ", group " << group;
      EXPECT_EQ(unit.shard_numel * group, unit.padded_numel);
      EXPECT_GE(unit.padded_numel, unit.numel);
      EXPECT_LT(unit.padded_numel - unit.numel, 256 * group) << unit.name << ", group " << group;
      EXPECT_EQ(unit.shard_numel, shard_numel_of(unit.numel, group, 256));
    }
    for (const UnitLayout& unit : build_adapter_unit_layouts(config, {LoraTarget::q, LoraTarget::v}, 4, group, 256)) {
      EXPECT_EQ(unit.shard_numel % 256, 0) << unit.name;
      EXPECT_GT(unit.shard_numel, 0) << unit.name;
    }
  }
  EXPECT_EQ(shard_numel_of(1000, 3), 334);
  EXPECT_EQ(shard_numel_of(1000, 3, 256), 512);
  EXPECT_EQ(shard_numel_of(0, 2, 256), 256);
  EXPECT_THROW(build_unit_layouts(config, 2, 0), ConfigError);
}

TEST(UnitLayout, OverlapOfAParameterWithARange) {
  const ParamSlot slot{{"w", {10}, ParamInit::normal, {}}, 20};  // elements [20, 30) of the flat vector
  EXPECT_EQ(overlap(slot, 0, 20).length, 0);
  const SlotOverlap middle = overlap(slot, 25, 100);
  EXPECT_EQ(middle.param_offset, 5);
  EXPECT_EQ(middle.range_offset, 0);
  EXPECT_EQ(middle.length, 5);
  const SlotOverlap inner = overlap(slot, 15, 8);
  EXPECT_EQ(inner.param_offset, 0);
  EXPECT_EQ(inner.range_offset, 5);
  EXPECT_EQ(inner.length, 3);
}

TEST(UnitShards, PresetShardsReassembleIntoTheWholeModel) {
  const ModelConfig config = preset_config("debug");
  const TensorMap whole = init_preset_weights(config, 7, at::kFloat);
  for (int group = 1; group <= 4; ++group) {
    for (const UnitLayout& unit : build_unit_layouts(config, group)) {
      std::vector<at::Tensor> shards;
      for (int rank = 0; rank < group; ++rank) shards.push_back(init_unit_shard(unit, rank, 7));
      EXPECT_TRUE(at::cat(shards).equal(expected_flat(unit, whole))) << unit.name << " group " << group;
    }
  }
}

TEST(UnitShards, CheckpointShardsReadOnlyTheirRangesAndReassemble) {
  const char* reference = std::getenv("ST_REFERENCE_DIR");
  if (reference == nullptr) GTEST_SKIP() << "ST_REFERENCE_DIR unset (run through ctest)";
  const std::string directory = std::string(reference) + "/llama_gqa";  // two files + index
  const LoadedModel whole = load_model(directory, "", 0, at::kFloat);
  const SafetensorsCheckpoint checkpoint(directory);
  for (int group = 1; group <= 4; ++group) {
    for (const UnitLayout& unit : build_unit_layouts(whole.config, group)) {
      std::vector<at::Tensor> shards;
      for (int rank = 0; rank < group; ++rank) shards.push_back(load_unit_shard(unit, rank, checkpoint));
      const at::Tensor flat = at::cat(shards);
      EXPECT_TRUE(flat.equal(expected_flat(unit, whole.tensors))) << unit.name << " group " << group;
      for (const auto& [name, view] : unit_param_views(unit, flat)) {
        EXPECT_TRUE(view.equal(whole.tensors.at(name))) << name;
      }
    }
  }
}

}  // namespace
}  // namespace st

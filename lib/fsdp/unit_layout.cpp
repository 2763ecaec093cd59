#include "fsdp/unit_layout.h"

#include <algorithm>

#include "util/errors.h"

namespace st {
namespace {

UnitLayout make_unit(std::string name, const std::vector<ParamSpec>& specs, int group_size) {
  UnitLayout unit;
  unit.name = std::move(name);
  for (const ParamSpec& spec : specs) {
    unit.params.push_back({spec, unit.numel});
    unit.numel += spec.numel();
  }
  unit.padded_numel = std::max<int64_t>(1, (unit.numel + group_size - 1) / group_size) * group_size;
  unit.shard_numel = unit.padded_numel / group_size;
  return unit;
}

}  // namespace

std::vector<UnitLayout> build_unit_layouts(const ModelConfig& config, int group_size) {
  if (group_size < 1) throw ConfigError("shard group size must be >= 1");
  std::vector<UnitLayout> units;
  units.push_back(make_unit("embedding", embedding_params(config), group_size));
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    units.push_back(make_unit("layer." + std::to_string(layer), layer_params(config, layer), group_size));
  }
  units.push_back(make_unit("head", head_params(config), group_size));
  return units;
}

std::vector<UnitLayout> build_adapter_unit_layouts(const ModelConfig& config, const std::vector<LoraTarget>& targets,
                                                   int64_t r, int group_size) {
  if (group_size < 1) throw ConfigError("shard group size must be >= 1");
  std::vector<UnitLayout> units;
  units.push_back(make_unit("embedding", {}, group_size));
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    units.push_back(make_unit("layer." + std::to_string(layer), lora_layer_params(config, layer, targets, r), group_size));
  }
  units.push_back(make_unit("head", {}, group_size));
  return units;
}

std::vector<size_t> units_run_with(const ModelConfig& config, size_t unit_count, size_t unit) {
  if (unit + 1 == unit_count && config.tie_word_embeddings) return {unit, 0};
  return {unit};
}

SlotOverlap overlap(const ParamSlot& slot, int64_t first, int64_t count) {
  const int64_t begin = std::max(slot.offset, first);
  const int64_t end = std::min(slot.offset + slot.spec.numel(), first + count);
  if (end <= begin) return {};
  return {begin - slot.offset, begin - first, end - begin};
}

DecayedRanges weight_decay_ranges(const std::vector<UnitLayout>& units, int shard_rank) {
  DecayedRanges decayed(units.size());
  for (size_t u = 0; u < units.size(); ++u) {
    for (const ParamSlot& slot : units[u].params) {
      if (slot.spec.shape.size() < 2) continue;  // norms and biases
      const SlotOverlap part = overlap(slot, units[u].shard_offset(shard_rank), units[u].shard_numel);
      if (part.length > 0) decayed[u].push_back({part.range_offset, part.length});
    }
  }
  return decayed;
}

}  // namespace st

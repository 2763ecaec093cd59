#include "fsdp/unit_layout.h"

#include <algorithm>

#include "model/llama_units.h"
#include "util/errors.h"

namespace st {
namespace {

UnitLayout make_unit(std::string name, const std::vector<ParamSpec>& specs, int group_size, int64_t shard_multiple) {
  UnitLayout unit;
  unit.name = std::move(name);
  for (const ParamSpec& spec : specs) {
    unit.params.push_back({spec, unit.numel});
    unit.numel += spec.numel();
  }
  unit.shard_numel = shard_numel_of(unit.numel, group_size, shard_multiple);
  unit.padded_numel = unit.shard_numel * group_size;
  return unit;
}

void check_geometry(int group_size, int64_t shard_multiple) {
  if (group_size < 1) throw ConfigError("shard group size must be >= 1");
  if (shard_multiple < 1) throw ConfigError("shard multiple must be >= 1");
}

}  // namespace

int64_t shard_numel_of(int64_t numel, int64_t group_size, int64_t shard_multiple) {
  const int64_t whole = group_size * shard_multiple;
  return std::max<int64_t>(1, (numel + whole - 1) / whole) * shard_multiple;
}

std::vector<UnitLayout> build_unit_layouts(const ModelConfig& config, int group_size, int64_t shard_multiple) {
  check_geometry(group_size, shard_multiple);
  std::vector<UnitLayout> units;
  units.push_back(make_unit("embedding", embedding_params(config), group_size, shard_multiple));
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    units.push_back(make_unit("layer." + std::to_string(layer), layer_params(config, layer), group_size, shard_multiple));
  }
  units.push_back(make_unit("head", head_params(config), group_size, shard_multiple));
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    if (config.sparse_layer(layer)) {
      units.push_back(make_unit(experts_unit_name(layer), expert_params(config, layer), group_size, shard_multiple));
    }
  }
  return units;
}

std::vector<UnitLayout> build_adapter_unit_layouts(const ModelConfig& config, const std::vector<LoraTarget>& targets,
                                                   int64_t r, int group_size, int64_t shard_multiple) {
  check_geometry(group_size, shard_multiple);
  std::vector<UnitLayout> units;
  units.push_back(make_unit("embedding", {}, group_size, shard_multiple));
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    units.push_back(make_unit("layer." + std::to_string(layer), lora_layer_params(config, layer, targets, r), group_size, shard_multiple));
  }
  units.push_back(make_unit("head", saved_module_params(config), group_size, shard_multiple));
  // The experts' pairs span every expert and live in their layer's unit (lora_layer_params).
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    if (config.sparse_layer(layer)) units.push_back(make_unit(experts_unit_name(layer), {}, group_size, shard_multiple));
  }
  return units;
}

std::vector<size_t> units_run_with(const ModelConfig& config, size_t unit) {
  const UnitRole role = unit_role(config, unit);
  if (role == UnitRole::head && config.head_reads_embedding()) return {unit, 0};
  if (role == UnitRole::layer && config.sparse_layer(static_cast<int64_t>(unit) - 1)) {
    return {unit, experts_unit_of(config, static_cast<int64_t>(unit) - 1)};
  }
  return {unit};
}

void check_expert_split_geometry(const ModelConfig& config, const std::vector<UnitLayout>& units, int64_t expert_parallel) {
  if (expert_parallel <= 1) return;
  const int64_t experts = config.experts.num_experts;
  const std::string where = "dist.expert_parallel = " + std::to_string(expert_parallel);
  if (experts == 0) throw ConfigError(where + ": the model has no experts; set dist.expert_parallel = 1");
  if (experts % expert_parallel != 0) {
    throw ConfigError(where + " does not divide the model's " + std::to_string(experts) +
                      " experts; choose a divisor of num_experts");
  }
  for (size_t u = run_unit_count(config); u < units.size(); ++u) {
    const UnitLayout& unit = units[u];
    if (unit.numel == 0 || unit.numel == unit.padded_numel) continue;
    throw ConfigError(where + ": " + unit.name + " (" + std::to_string(unit.numel) + " elements) does not split into " +
                      std::to_string(unit.padded_numel / unit.shard_numel) + " equal shards (of whole optimizer "
                      "blocks), so a rank's shard would straddle two ranks' experts; choose another rank count or "
                      "dist.expert_parallel = 1");
  }
}

std::string experts_unit_name(int64_t layer) { return "layer." + std::to_string(layer) + ".experts"; }

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
      if (!weight_decayed(slot.spec.key)) continue;  // norms and biases
      const SlotOverlap part = overlap(slot, units[u].shard_offset(shard_rank), units[u].shard_numel);
      if (part.length > 0) decayed[u].push_back({part.range_offset, part.length});
    }
  }
  return decayed;
}

}  // namespace st

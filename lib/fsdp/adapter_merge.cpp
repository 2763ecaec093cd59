#include "fsdp/adapter_merge.h"

#include <ATen/ATen.h>

#include "model/adapted_pieces.h"
#include "util/errors.h"

namespace st {
namespace {

// The base modules an adapter run trained in full (saved_module_params: a reward model's score)
// replace the base's, in the part of the unit this shard holds.
void take_saved_modules(const UnitLayout& unit, at::Tensor& shard_values, int shard, const TensorMap& adapters) {
  for (const ParamSlot& slot : unit.params) {
    if (slot.spec.key.kind != ParamKey::Kind::model) continue;
    const auto trained = adapters.find(saved_module_name(slot.spec.name));
    if (trained == adapters.end()) continue;
    const SlotOverlap piece = overlap(slot, unit.shard_offset(shard), unit.shard_numel);
    if (piece.length == 0) continue;
    shard_values.narrow(0, piece.range_offset, piece.length)
        .copy_(trained->second.reshape({-1}).narrow(0, piece.param_offset, piece.length));
  }
}

// W + scale * B A over the part of weight `weight` that lies in this rank's shard of `unit`.
void merge_into_shard(const UnitLayout& unit, at::Tensor& shard_values, int shard, const std::string& weight,
                      const LoraPair& pair, double scale) {
  for (const ParamSlot& slot : unit.params) {
    if (slot.spec.name != weight) continue;
    const SlotOverlap piece = overlap(slot, unit.shard_offset(shard), unit.shard_numel);
    if (piece.length == 0) return;
    const int64_t columns = slot.spec.shape.at(1);
    const int64_t first_row = piece.param_offset / columns;
    const int64_t end_row = (piece.param_offset + piece.length + columns - 1) / columns;
    // The whole rows the piece touches, merged, then the piece cut back out of them.
    at::Tensor target = shard_values.narrow(0, piece.range_offset, piece.length);
    at::Tensor rows = at::zeros({end_row - first_row, columns}, at::kFloat).view({-1});
    rows.narrow(0, piece.param_offset - first_row * columns, piece.length).copy_(target);
    const at::Tensor merged = merged_rows(rows.view({end_row - first_row, columns}), pair, scale, first_row);
    target.copy_(merged.view({-1}).narrow(0, piece.param_offset - first_row * columns, piece.length));
    return;
  }
}

}  // namespace

TensorMap gather_adapters(const std::vector<UnitLayout>& units, const std::vector<at::Tensor>& masters, int shard,
                          bool writes, Communicator& world) {
  TensorMap adapters;
  for (size_t u = 0; u < units.size(); ++u) {
    const UnitLayout& unit = units[u];
    if (unit.params.empty()) continue;
    at::Tensor flat = at::zeros({unit.padded_numel}, at::kFloat);
    if (writes) flat.narrow(0, unit.shard_offset(shard), unit.shard_numel).copy_(masters.at(u));
    world.all_reduce(flat, ReduceOp::sum);
    for (const ParamSlot& slot : unit.params) {
      adapters[slot.spec.name] = flat.narrow(0, slot.offset, slot.spec.numel()).view(slot.spec.shape);
    }
  }
  return adapters;
}

void merge_adapters_into_shards(const ModelConfig& config, const std::vector<UnitLayout>& base_units,
                                std::vector<at::Tensor>& base_shards, int shard, const TensorMap& adapters,
                                double scale) {
  for (size_t u = 0; u < base_units.size(); ++u) {
    const UnitLayout& unit = base_units[u];
    if (unit_role(config, u) == UnitRole::head) {
      take_saved_modules(unit, base_shards.at(u), shard, adapters);
      continue;
    }
    if (unit_role(config, u) != UnitRole::layer) continue;
    const int64_t layer = static_cast<int64_t>(u) - 1;
    for (const auto& [weight, pair] : adapted_pieces(config, layer, model_lora_targets(config), adapters)) {
      for (size_t holder : units_run_with(config, u)) {  // a sparse layer's experts are in its experts unit
        merge_into_shard(base_units.at(holder), base_shards.at(holder), shard, weight, pair, scale);
      }
    }
  }
}

}  // namespace st

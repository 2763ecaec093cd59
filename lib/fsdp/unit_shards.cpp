#include "fsdp/unit_shards.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "hf/model_weights.h"

namespace st {
namespace {

// The part of a slot's seeded init (init_parameter) that falls in this shard.
void seed_part(at::Tensor& shard, const ParamSlot& slot, const SlotOverlap& part, uint64_t seed) {
  shard.narrow(0, part.range_offset, part.length)
      .copy_(init_parameter(slot.spec, seed).view({-1}).narrow(0, part.param_offset, part.length));
}

}  // namespace

at::Tensor load_unit_shard(const UnitLayout& unit, int rank, const SafetensorsCheckpoint& checkpoint,
                           const NewParams& fresh) {
  const int64_t first = unit.shard_offset(rank);
  at::Tensor shard = at::zeros({unit.shard_numel}, at::kFloat);
  for (const ParamSlot& slot : unit.params) {
    const SlotOverlap part = overlap(slot, first, unit.shard_numel);
    if (part.length == 0) continue;
    if (std::find(fresh.names.begin(), fresh.names.end(), slot.spec.name) != fresh.names.end()) {
      seed_part(shard, slot, part, fresh.seed);
      continue;
    }
    check_param_against_config(checkpoint, slot.spec);
    checkpoint.read_range_into(slot.spec.name, part.param_offset, part.length,
                               shard.narrow(0, part.range_offset, part.length));
  }
  return shard;
}

at::Tensor init_unit_shard(const UnitLayout& unit, int rank, uint64_t seed) {
  const int64_t first = unit.shard_offset(rank);
  at::Tensor shard = at::zeros({unit.shard_numel}, at::kFloat);
  for (const ParamSlot& slot : unit.params) {
    const SlotOverlap part = overlap(slot, first, unit.shard_numel);
    if (part.length == 0) continue;
    seed_part(shard, slot, part, seed);
  }
  return shard;
}

TensorMap unit_param_views(const UnitLayout& unit, const at::Tensor& flat) {
  TensorMap views;
  for (const ParamSlot& slot : unit.params) {
    views[slot.spec.name] = flat.narrow(0, slot.offset, slot.spec.numel()).view(slot.spec.shape);
  }
  return views;
}

}  // namespace st

#include "fsdp/whole_model.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "fsdp/adapter_merge.h"
#include "fsdp/quantized_base.h"
#include "model/adapted_pieces.h"

namespace st {
namespace {

// The group's shards of one unit in rank order, from this rank's `shard` (on the device).
at::Tensor all_gathered(const at::Tensor& shard, Communicator& group) {
  const at::Tensor whole = at::empty({shard.numel() * group.size()}, shard.options());
  group.all_gather_into(whole, shard.contiguous());
  return whole;
}

// Every unit of `units` whole, from this rank's fp32 `shards` (host or device).
TensorMap gather_units(const std::vector<UnitLayout>& units, const std::vector<at::Tensor>& shards,
                       Communicator& shard_group, const FsdpModelOptions& options) {
  TensorMap tensors;
  for (size_t u = 0; u < units.size(); ++u) {
    const UnitLayout& unit = units[u];
    const at::Tensor full = all_gathered(shards[u].to(options.device, at::kFloat), shard_group);
    for (const ParamSlot& slot : unit.params) {
      tensors[slot.spec.name] =
          full.narrow(0, slot.offset, slot.spec.numel()).view(slot.spec.shape).to(options.compute_dtype).clone();
    }
  }
  return tensors;
}

// A QLoRA base whole: each unit's NF4 bytes gathered and dequantized in fp32, a layer's with its
// experts unit, its adapters folded in (W + scale B A, as a merged LoRA checkpoint is), then kept
// in the compute dtype: one layer in fp32 at a time.
TensorMap gather_quantized_base(FsdpModel& model, Communicator& shard_group, const TensorMap& adapters) {
  const ModelConfig& config = model.config();
  const FrozenBase& base = model.base();
  const FsdpModelOptions& options = model.options();
  const auto unit_values = [&](size_t unit, TensorMap& values) {
    const at::Tensor flat =
        dequantize_unit(base.quantized[unit], all_gathered(base.shards[unit].to(options.device), shard_group), at::kFloat);
    for (const ParamSlot& slot : base.quantized[unit].layout.bound.params) {
      values[slot.spec.name] = flat.narrow(0, slot.offset, slot.spec.numel()).view(slot.spec.shape);
    }
  };
  const std::vector<LoraTarget> targets = model_lora_targets(config);
  TensorMap whole;
  for (size_t unit = 0; unit < run_unit_count(config); ++unit) {
    const UnitRole role = unit_role(config, unit);
    TensorMap values;
    // A layer runs with its experts unit; the head's tied embedding is the embedding unit's.
    for (size_t holder : role == UnitRole::layer ? units_run_with(config, unit) : std::vector<size_t>{unit}) {
      unit_values(holder, values);
    }
    if (role == UnitRole::layer) {
      for (const auto& [weight, pair] : adapted_pieces(config, static_cast<int64_t>(unit) - 1, targets, adapters)) {
        values.at(weight).add_(at::mm(pair.b.to(options.device), pair.a.to(options.device)), options.adapter.scale);
      }
    }
    for (auto& [name, tensor] : values) {
      const auto trained = adapters.find(saved_module_name(name));  // a reward model's score, trained in full
      const at::Tensor& value = trained == adapters.end() ? tensor : trained->second;
      whole[name] = value.to(options.device, options.compute_dtype, false, /*copy=*/true);
    }
  }
  return whole;
}

}  // namespace

void check_whole_model_gatherable(FsdpModel& model, const std::string& purpose) {
  model.refuse_split_experts(purpose);
}

TensorMap gather_whole_model(FsdpModel& model, Communicator& host) {
  const c10::NoGradGuard no_grad;
  check_whole_model_gatherable(model, "decoding (rollouts, generate tasks) must");
  ShardingGroups& groups = model.groups();
  Communicator& shard_group = *groups.shard;
  const FrozenBase& base = model.base();
  if (!base.present()) return gather_units(model.units(), model.master_shards(), shard_group, model.options());
  // Replicas hold the same adapters: the first replica alone contributes them.
  const bool writes = !groups.replica || groups.replica->rank() == 0;
  const TensorMap adapters = gather_adapters(model.units(), model.master_shards(), shard_group.rank(), writes, host);
  if (base.is_quantized()) return gather_quantized_base(model, shard_group, adapters);
  std::vector<at::Tensor> merged;
  for (const at::Tensor& shard : base.shards) merged.push_back(shard.to(at::kCPU, at::kFloat, false, true));
  merge_adapters_into_shards(model.config(), base.units, merged, shard_group.rank(), adapters,
                             model.options().adapter.scale);
  return gather_units(base.units, merged, shard_group, model.options());
}

}  // namespace st

#include "fsdp/whole_model.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "fsdp/adapter_merge.h"
#include "util/errors.h"

namespace st {
namespace {

// Every unit of `units` whole, from this rank's fp32 `shards` (host or device).
TensorMap gather_units(const std::vector<UnitLayout>& units, const std::vector<at::Tensor>& shards,
                       Communicator& shard_group, const FsdpModelOptions& options) {
  TensorMap tensors;
  for (size_t u = 0; u < units.size(); ++u) {
    const UnitLayout& unit = units[u];
    const at::Tensor shard = shards[u].to(options.device, at::kFloat).contiguous();
    const at::Tensor full = at::empty({unit.padded_numel}, shard.options());
    shard_group.all_gather_into(full, shard);
    for (const ParamSlot& slot : unit.params) {
      tensors[slot.spec.name] =
          full.narrow(0, slot.offset, slot.spec.numel()).view(slot.spec.shape).to(options.compute_dtype).clone();
    }
  }
  return tensors;
}

}  // namespace

void check_whole_model_gatherable(FsdpModel& model, const std::string& purpose) {
  model.refuse_split_experts(purpose);
  if (model.base().is_quantized()) {
    throw ConfigError(purpose + " gather the whole model, and a QLoRA base is dequantized one unit at a time only: "
                      "set train.method = lora or full");
  }
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
  std::vector<at::Tensor> merged;
  for (const at::Tensor& shard : base.shards) merged.push_back(shard.to(at::kCPU, at::kFloat, false, true));
  merge_adapters_into_shards(model.config(), base.units, merged, shard_group.rank(), adapters,
                             model.options().adapter.scale);
  return gather_units(base.units, merged, shard_group, model.options());
}

}  // namespace st

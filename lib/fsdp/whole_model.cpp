#include "fsdp/whole_model.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "fsdp/adapter_merge.h"
#include "fsdp/quantized_base.h"
#include "model/adapted_pieces.h"

namespace st {
namespace {

// This rank's gather of unit `unit` from its `shard` (on the device): the group's shards in rank
// order (FsdpModel::group_of: an experts unit's run under expert parallelism).
at::Tensor all_gathered(const FsdpModel& model, size_t unit, const at::Tensor& shard) {
  Communicator& group = model.group_of(unit);
  const at::Tensor whole = at::empty({shard.numel() * group.size()}, shard.options());
  group.all_gather_into(whole, shard.contiguous());
  return whole;
}

// Each parameter of `layout` that unit `unit`'s gather `flat` holds, by name (another rank's
// experts are left out).
void add_held_params(const FsdpModel& model, const UnitLayout& layout, size_t unit, const at::Tensor& flat,
                     TensorMap& into) {
  const int64_t first = model.gathered_first(layout, unit);
  for (const ParamSlot& slot : layout.params) {
    const at::Tensor view = gathered_param_view(flat, slot, first);
    if (view.defined()) into[slot.spec.name] = view;
  }
}

// Every unit of `units` this rank holds, from its fp32 `shards` (host or device).
TensorMap gather_units(const FsdpModel& model, const std::vector<UnitLayout>& units,
                       const std::vector<at::Tensor>& shards) {
  const FsdpModelOptions& options = model.options();
  TensorMap tensors;
  for (size_t u = 0; u < units.size(); ++u) {
    TensorMap held;
    add_held_params(model, units[u], u, all_gathered(model, u, shards[u].to(options.device, at::kFloat)), held);
    for (auto& [name, view] : held) tensors[name] = view.to(options.compute_dtype).clone();  // the flat freed
  }
  return tensors;
}

// A QLoRA base whole: each unit's NF4 bytes gathered and dequantized in fp32, a layer's with its
// experts unit, its adapters folded in (W + scale B A, as a merged LoRA checkpoint is), then kept
// in the compute dtype: one layer in fp32 at a time.
TensorMap gather_quantized_base(FsdpModel& model, const TensorMap& adapters) {
  const ModelConfig& config = model.config();
  const FrozenBase& base = model.base();
  const FsdpModelOptions& options = model.options();
  const auto unit_values = [&](size_t unit, TensorMap& values) {
    const QuantizedUnit& quantized = base.quantized[unit];
    const at::Tensor gathered = all_gathered(model, unit, base.shards[unit].to(options.device));
    // A split experts unit holds no NF4 block: its bytes are a run of its values (as its forward reads them).
    const at::Tensor flat = model.splits_experts(unit) ? gathered.view(options.compute_dtype).to(at::kFloat)
                                                       : dequantize_unit(quantized, gathered, at::kFloat);
    add_held_params(model, quantized.layout.bound, unit, flat, values);
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
        if (values.count(weight) == 0 && model.expert_exchange()) continue;  // another rank's expert
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

// The tensors this rank decodes with, by Hugging Face name.
TensorMap gathered_tensors(FsdpModel& model, Communicator& host) {
  ShardingGroups& groups = model.groups();
  const FrozenBase& base = model.base();
  if (!base.present()) return gather_units(model, model.units(), model.master_shards());
  // Replicas hold the same adapters: the first replica alone contributes them.
  const bool writes = !groups.replica || groups.replica->rank() == 0;
  const int shard = groups.shard->rank();
  const TensorMap adapters = gather_adapters(model.units(), model.master_shards(), shard, writes, host);
  if (base.is_quantized()) return gather_quantized_base(model, adapters);
  std::vector<at::Tensor> merged;
  for (const at::Tensor& shard_values : base.shards) merged.push_back(shard_values.to(at::kCPU, at::kFloat, false, true));
  merge_adapters_into_shards(model.config(), base.units, merged, shard, adapters, model.options().adapter.scale);
  return gather_units(model, base.units, merged);
}

}  // namespace

LlamaWeights gather_whole_model(FsdpModel& model, Communicator& host) {
  const c10::NoGradGuard no_grad;
  return llama_weights(gathered_tensors(model, host), model.config(), model.expert_exchange());
}

}  // namespace st

#include "fsdp/fsdp_model.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <optional>

#include "fsdp/unit_shards.h"
#include "model/rope.h"
#include "util/errors.h"

namespace st {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// The batch travels in the autograd context (two forwards may precede their backwards).
void save_batch(AutogradContext* context, const TokenBatch& batch) {
  context->saved_data["batch"] = std::vector<at::Tensor>{batch.input_ids, batch.rope.cos, batch.rope.sin,
                                                         batch.target_positions, batch.target_ids};
  context->saved_data["rows"] = batch.rows;
  context->saved_data["chunk"] = batch.logp_chunk_tokens;
}

TokenBatch load_batch(AutogradContext* context) {
  const std::vector<at::Tensor> t = context->saved_data["batch"].toTensorVector();
  TokenBatch batch;
  batch.input_ids = t[0];
  batch.rope = {t[1], t[2]};
  batch.target_positions = t[3];
  batch.target_ids = t[4];
  batch.rows = context->saved_data["rows"].toInt();
  batch.logp_chunk_tokens = context->saved_data["chunk"].toInt();
  return batch;
}

// A unit's parameters by name for the model: views of the gathered flats. Those with a
// gradient target become leaves that require grad, except the ones the model writes itself
// (`sinks`); `leaves` gets (unit index in targets, slot, leaf) for reading their grads back.
struct Leaf {
  size_t target;
  const ParamSlot* slot;
  at::Tensor tensor;
};

TensorMap unit_inputs(const FsdpModel& model, const std::vector<size_t>& needed, const std::vector<at::Tensor>& flats,
                      const UnitGradSinks* sinks, std::vector<Leaf>* leaves) {
  TensorMap params;
  for (size_t i = 0; i < needed.size(); ++i) {
    for (const ParamSlot& slot : model.units()[needed[i]].params) {
      // A unit run with another's parameters (a tied head) takes only its lm_head weight.
      if (i > 0 && slot.spec.name != lm_head_weight_name(model.config())) continue;
      at::Tensor view = flats[i].narrow(0, slot.offset, slot.spec.numel()).view(slot.spec.shape);
      const bool sunk = sinks && sinks->destinations.count(slot.spec.name);
      if (leaves && !sunk) {
        view = view.detach().requires_grad_(true);
        leaves->push_back({i, &slot, view});
      }
      params[slot.spec.name] = view;
    }
  }
  return params;
}

// The model writes the lm_head's gradient itself when it can sum it in fp32 (an fp32
// destination and a compute dtype whose log-prob reduction is fp32).
UnitGradSinks head_sinks(const FsdpModel& model, size_t unit, const std::vector<FsdpModel::GradTarget>& targets) {
  UnitGradSinks sinks;
  if (unit_role(unit, model.units().size()) != UnitRole::head || model.options().compute_dtype == at::kDouble) {
    return sinks;
  }
  const char* name = lm_head_weight_name(model.config());
  for (const FsdpModel::GradTarget& target : targets) {
    for (const ParamSlot& slot : model.units()[target.unit].params) {
      if (slot.spec.name != name) continue;
      sinks.destinations[name] = target.flat.narrow(0, slot.offset, slot.spec.numel()).view(slot.spec.shape);
      sinks.overwrite = target.overwrite;
    }
  }
  return sinks;
}

void write_leaf_grads(const std::vector<Leaf>& leaves, const tensor_list& grads,
                      const std::vector<FsdpModel::GradTarget>& targets) {
  for (size_t i = 0; i < leaves.size(); ++i) {
    const FsdpModel::GradTarget& target = targets[leaves[i].target];
    at::Tensor destination = target.flat.narrow(0, leaves[i].slot->offset, leaves[i].slot->spec.numel());
    const at::Tensor& grad = grads[i];
    if (!grad.defined()) {
      if (target.overwrite) destination.zero_();
    } else if (target.overwrite) {
      destination.copy_(grad.reshape({-1}));  // fp32 = bf16 in one pass
    } else {
      destination.add_(grad.reshape({-1}));  // fp32 += bf16 in one pass
    }
  }
}

std::vector<at::Tensor> tensors_of(const std::vector<Leaf>& leaves) {
  std::vector<at::Tensor> tensors;
  for (const Leaf& leaf : leaves) tensors.push_back(leaf.tensor);
  return tensors;
}

// One unit as an autograd node. Forward keeps what the unit's recompute policy says: nothing
// but its input (full), also its matmul outputs (selective), or its whole graph (none, and the
// head). Backward writes the parameter gradients into their targets and returns the input's.
// `anchor` is an empty tensor that requires grad, so the embedding unit (whose real input, the
// token ids, needs none) still gets a backward call.
class UnitFunction : public torch::autograd::Function<UnitFunction> {
 public:
  static at::Tensor forward(AutogradContext* context, const at::Tensor& input, const at::Tensor& anchor,
                            int64_t model_address, int64_t unit, int64_t batch_address) {
    auto& model = *reinterpret_cast<FsdpModel*>(model_address);
    const auto& batch = *reinterpret_cast<const TokenBatch*>(batch_address);
    (void)anchor;
    const auto u = static_cast<size_t>(unit);
    const size_t count = model.units().size();
    context->saved_data["model"] = model_address;
    context->saved_data["unit"] = unit;
    save_batch(context, batch);
    context->save_for_backward({input});
    const std::vector<size_t> needed = model.units_needed_by(u);
    const std::vector<at::Tensor> flats = model.acquire_for_forward(u);
    const Recompute policy = model.recompute_of(u);
    at::Tensor output;
    if (model.differentiating() && policy == Recompute::none && unit_role(u, count) != UnitRole::embedding) {
      // Keep the graph: leaves for the parameters and the input, targets fixed now.
      std::vector<FsdpModel::GradTarget> targets = model.grad_targets(u);
      const UnitGradSinks sinks = head_sinks(model, u, targets);
      std::vector<Leaf> leaves;
      const TensorMap params = unit_inputs(model, needed, flats, &sinks, &leaves);
      const at::Tensor input_leaf = input.detach().requires_grad_(true);
      at::AutoGradMode enable(true);
      const at::Tensor kept = llama_unit_forward(model.config(), u, count, params, input_leaf, batch, nullptr, sinks);
      context->saved_data["kept"] = kept;
      context->saved_data["kept_input"] = input_leaf;
      context->saved_data["kept_leaves"] = tensors_of(leaves);
      context->saved_data["kept_slots"] = slot_indices(model, needed, leaves);
      context->saved_data["targets"] = target_flats(targets);
      context->saved_data["overwrite"] = target_overwrites(targets);
      output = kept.detach();
    } else if (model.differentiating() && policy == Recompute::selective) {
      ActivationCache cache;
      output = llama_unit_forward(model.config(), u, count, unit_inputs(model, needed, flats, nullptr, nullptr),
                                  input, batch, &cache);
      context->saved_data["recorded"] = cache.take_recorded();
    } else {
      output = llama_unit_forward(model.config(), u, count, unit_inputs(model, needed, flats, nullptr, nullptr),
                                  input, batch);
    }
    model.finish_forward(u);
    return output;  // grad mode is off here: what the unit keeps is what the context holds
  }

  static tensor_list backward(AutogradContext* context, tensor_list grads) {
    auto& model = *reinterpret_cast<FsdpModel*>(context->saved_data["model"].toInt());
    const auto u = static_cast<size_t>(context->saved_data["unit"].toInt());
    const size_t count = model.units().size();
    const TokenBatch batch = load_batch(context);
    const at::Tensor saved_input = context->get_saved_variables()[0];
    const UnitRole role = unit_role(u, count);
    const bool kept = context->saved_data.count("kept") > 0;
    const std::vector<size_t> needed = model.units_needed_by(u);
    const std::vector<at::Tensor> flats = model.acquire_for_backward(u, !kept && role != UnitRole::embedding);

    std::vector<FsdpModel::GradTarget> targets;
    at::Tensor input_grad;
    if (role == UnitRole::embedding) {
      targets = model.grad_targets(u);
      UnitGradSinks sinks;
      sinks.overwrite = targets.front().overwrite;
      const ParamSlot& slot = model.units()[u].params.front();
      sinks.destinations[slot.spec.name] =
          targets.front().flat.narrow(0, slot.offset, slot.spec.numel()).view(slot.spec.shape);
      embedding_backward(batch, grads[0], sinks);
    } else if (kept) {
      targets = restore_targets(model, needed, context);
      const std::vector<at::Tensor> leaf_tensors = context->saved_data["kept_leaves"].toTensorVector();
      std::vector<at::Tensor> wrt = leaf_tensors;
      wrt.push_back(context->saved_data["kept_input"].toTensor());
      auto results = torch::autograd::grad({context->saved_data["kept"].toTensor()}, wrt, {grads[0]},
                                           /*retain_graph=*/false, /*create_graph=*/false, /*allow_unused=*/true);
      input_grad = results.back();
      results.pop_back();
      write_leaf_grads(restore_leaves(model, needed, context, leaf_tensors), results, targets);
    } else {
      targets = model.grad_targets(u);
      std::vector<Leaf> leaves;
      const TensorMap params = unit_inputs(model, needed, flats, nullptr, &leaves);
      const at::Tensor input = saved_input.detach().requires_grad_(true);
      std::optional<ActivationCache> cache;
      if (context->saved_data.count("recorded")) cache.emplace(context->saved_data["recorded"].toTensorVector());
      at::Tensor output;
      {
        at::AutoGradMode enable(true);
        output = llama_unit_forward(model.config(), u, count, params, input, batch, cache ? &*cache : nullptr);
      }
      std::vector<at::Tensor> wrt = tensors_of(leaves);
      wrt.push_back(input);
      auto results = torch::autograd::grad({output}, wrt, {grads[0]}, /*retain_graph=*/false,
                                           /*create_graph=*/false, /*allow_unused=*/true);
      input_grad = results.back();
      results.pop_back();
      write_leaf_grads(leaves, results, targets);
    }
    model.finish_backward(u, targets);
    return {role == UnitRole::embedding ? at::Tensor() : input_grad, at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }

 private:
  // Kept leaves are identified by (target, slot index) so backward can find their destinations.
  static std::vector<int64_t> slot_indices(const FsdpModel& model, const std::vector<size_t>& needed,
                                           const std::vector<Leaf>& leaves) {
    std::vector<int64_t> indices;
    for (const Leaf& leaf : leaves) {
      const auto& params = model.units()[needed[leaf.target]].params;
      indices.push_back(static_cast<int64_t>(leaf.target));
      indices.push_back(static_cast<int64_t>(leaf.slot - params.data()));
    }
    return indices;
  }

  static std::vector<Leaf> restore_leaves(const FsdpModel& model, const std::vector<size_t>& needed,
                                          AutogradContext* context, const std::vector<at::Tensor>& tensors) {
    const std::vector<int64_t> indices = context->saved_data["kept_slots"].toIntVector();
    std::vector<Leaf> leaves;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const auto target = static_cast<size_t>(indices[2 * i]);
      const ParamSlot* slot = &model.units()[needed[target]].params[static_cast<size_t>(indices[2 * i + 1])];
      leaves.push_back({target, slot, tensors[i]});
    }
    return leaves;
  }

  static std::vector<at::Tensor> target_flats(const std::vector<FsdpModel::GradTarget>& targets) {
    std::vector<at::Tensor> flats;
    for (const auto& target : targets) flats.push_back(target.flat);
    return flats;
  }

  static std::vector<int64_t> target_overwrites(const std::vector<FsdpModel::GradTarget>& targets) {
    std::vector<int64_t> overwrites;
    for (const auto& target : targets) overwrites.push_back(target.overwrite ? 1 : 0);
    return overwrites;
  }

  static std::vector<FsdpModel::GradTarget> restore_targets(FsdpModel& model, const std::vector<size_t>& needed,
                                                            AutogradContext* context) {
    const std::vector<at::Tensor> flats = context->saved_data["targets"].toTensorVector();
    const std::vector<int64_t> overwrites = context->saved_data["overwrite"].toIntVector();
    const bool direct = model.groups().shard->size() == 1 && !model.groups().replica;
    std::vector<FsdpModel::GradTarget> targets;
    for (size_t i = 0; i < needed.size(); ++i) targets.push_back({needed[i], flats[i], overwrites[i] != 0, direct});
    return targets;
  }
};

int64_t storage_bytes(const at::Tensor& tensor) { return static_cast<int64_t>(tensor.nbytes()); }

}  // namespace

FsdpModel::FsdpModel(const ModelConfig& config, std::vector<UnitLayout> units, ShardingGroups& groups,
                     std::vector<at::Tensor> master_shards, const FsdpModelOptions& options)
    : config_(config), units_(std::move(units)), groups_(groups), options_(options), master_(std::move(master_shards)) {
  if (master_.size() != units_.size()) throw ModelError("FSDP: one master shard per unit expected");
  if (units_.size() != unit_count(config_)) throw ModelError("FSDP: the unit layout does not follow the model");
  if (!options_.recompute.empty() && options_.recompute.size() != units_.size()) {
    throw ModelError("FSDP: one recompute policy per unit expected");
  }
  const int shard_size = groups_.shard->size();
  for (size_t u = 0; u < units_.size(); ++u) {
    if (units_[u].shard_numel * shard_size != units_[u].padded_numel) {
      throw ModelError("FSDP: unit " + units_[u].name + " is laid out for another shard-group size");
    }
    if (master_[u].numel() != units_[u].shard_numel) throw ModelError("FSDP: shard size differs from the unit layout");
    if (!options_.frozen) {
      grads_.push_back(at::zeros({units_[u].shard_numel}, at::TensorOptions(at::kFloat).device(options_.device)));
    }
  }
  written_.assign(grads_.size(), true);  // zero-initialised above
  inverse_frequencies_ = rope_inverse_frequencies(config_).to(options_.device);
  refresh_compute_shards();
}

std::vector<at::Tensor>& FsdpModel::grad_shards() {
  if (options_.frozen) throw ModelError("FSDP: a frozen model has no gradients");
  drain_reductions();
  for (size_t u = 0; u < grads_.size(); ++u) {
    if (!written_[u]) grads_[u].zero_();
    written_[u] = true;
  }
  return grads_;
}

void FsdpModel::zero_grad() {
  drain_reductions();
  written_.assign(grads_.size(), false);
}

void FsdpModel::set_recompute(std::vector<Recompute> plan) {
  if (!plan.empty() && plan.size() != units_.size()) throw ModelError("FSDP: one recompute policy per unit expected");
  options_.recompute = std::move(plan);
}

Recompute FsdpModel::recompute_of(size_t unit) const {
  const UnitRole role = unit_role(unit, units_.size());
  if (role == UnitRole::head) return Recompute::none;  // last in forward, first in backward
  if (role == UnitRole::embedding) return Recompute::full;  // its backward needs no recompute
  return options_.recompute.empty() ? Recompute::full : options_.recompute[unit];
}

std::vector<at::Tensor> FsdpModel::compute_copies() const {
  if (compute_.empty() || compute_.front().is_same(master_.front())) return {};
  return compute_;
}

void FsdpModel::refresh_compute_shards(bool written_in_place) {
  gathered_.clear();  // gathered copies of the old values must not be reused
  if (written_in_place) return;
  compute_.clear();
  for (const auto& master : master_) compute_.push_back(master.to(options_.device, options_.compute_dtype));
}

EngineMemory FsdpModel::memory() const {
  EngineMemory memory;
  for (size_t u = 0; u < units_.size(); ++u) {
    memory.params += storage_bytes(master_[u]);
    if (!compute_[u].is_same(master_[u])) memory.params += storage_bytes(compute_[u]);
    if (!options_.frozen) memory.grads += storage_bytes(grads_[u]);
  }
  memory.gathered_peak = gathered_peak_;
  return memory;
}

std::vector<size_t> FsdpModel::units_needed_by(size_t unit) const {
  return units_run_with(config_, units_.size(), unit);
}

void FsdpModel::start_gather(size_t unit) {
  if (gathered_.count(unit)) return;
  Gathered& entry = gathered_[unit];
  if (groups_.shard->size() == 1) {
    entry.flat = compute_[unit];  // the whole unit is local: nothing to gather or allocate
  } else {
    entry.flat = at::empty({units_[unit].padded_numel}, compute_[unit].options());
    entry.work = groups_.shard->all_gather_into_async(entry.flat, compute_[unit]);
    comm_.all_gather += storage_bytes(entry.flat);
    int64_t alive = 0;
    for (const auto& [u, gathered] : gathered_) alive += storage_bytes(gathered.flat);
    gathered_peak_ = std::max(gathered_peak_, alive);
  }
  most_alive_ = std::max(most_alive_, static_cast<int64_t>(gathered_.size()));
}

std::vector<at::Tensor> FsdpModel::wait_gathered(size_t unit) {
  std::vector<at::Tensor> flats;
  for (size_t needed : units_needed_by(unit)) {
    start_gather(needed);
    Gathered& entry = gathered_.at(needed);
    entry.work.wait();
    flats.push_back(entry.flat);
  }
  return flats;
}

void FsdpModel::release(size_t unit) { gathered_.erase(unit); }

std::vector<at::Tensor> FsdpModel::acquire_for_forward(size_t unit) {
  std::vector<at::Tensor> flats = wait_gathered(unit);
  if (unit + 1 < units_.size()) {
    for (size_t next : units_needed_by(unit + 1)) start_gather(next);
  }
  return flats;
}

void FsdpModel::finish_forward(size_t unit) {
  if (keep_until_backward_) return;
  for (size_t needed : units_needed_by(unit)) release(needed);
}

bool FsdpModel::gathers_in_backward(size_t unit) const {
  const UnitRole role = unit_role(unit, units_.size());
  return role != UnitRole::embedding && recompute_of(unit) != Recompute::none;
}

std::vector<at::Tensor> FsdpModel::acquire_for_backward(size_t unit, bool needs_parameters) {
  std::vector<at::Tensor> flats;
  if (needs_parameters) flats = wait_gathered(unit);
  if (unit > 0 && gathers_in_backward(unit - 1)) {
    for (size_t previous : units_needed_by(unit - 1)) start_gather(previous);
  }
  return flats;
}

std::vector<FsdpModel::GradTarget> FsdpModel::grad_targets(size_t unit) {
  std::vector<GradTarget> targets;
  const bool direct = groups_.shard->size() == 1 && !groups_.replica;
  for (size_t needed : units_needed_by(unit)) {
    GradTarget target;
    target.unit = needed;
    target.direct = direct;
    if (direct) {
      target.flat = grads_[needed];
      target.overwrite = !written_[needed];
      written_[needed] = true;
    } else {
      const UnitLayout& layout = units_[needed];
      target.flat = at::empty({layout.padded_numel}, grads_[needed].options());
      target.flat.narrow(0, layout.numel, layout.padded_numel - layout.numel).zero_();
    }
    targets.push_back(std::move(target));
  }
  return targets;
}

void FsdpModel::finish_backward(size_t unit, std::vector<GradTarget>& targets) {
  std::vector<Reduction> previous;
  previous.swap(reductions_);
  for (GradTarget& target : targets) {
    if (!target.direct) start_reduction(target.unit, target.flat);
  }
  complete(previous);  // while this unit's reductions are in flight
  for (size_t gathered : units_needed_by(unit)) {
    // A kept embedding serves the embedding unit's backward, still to come.
    if (gathered == unit || !keep_until_backward_) release(gathered);
  }
  if (unit == 0) {  // the last unit of a backward pass
    drain_reductions();
    gathered_.clear();
  }
}

void FsdpModel::start_reduction(size_t unit, const at::Tensor& flat_grad) {
  Reduction reduction{unit, {}, {}};
  const at::Tensor full = flat_grad.to(options_.reduce_dtype).contiguous();
  // The step's first contribution is reduced straight into the fp32 shard, later ones added.
  reduction.written = !written_[unit] && full.scalar_type() == at::kFloat;
  if (reduction.written) written_[unit] = true;
  if (groups_.shard->size() == 1) {
    reduction.shard = reduction.written ? grads_[unit].copy_(full) : full;
  } else {
    reduction.shard = reduction.written ? grads_[unit] : at::empty({units_[unit].shard_numel}, full.options());
    reduction.work = groups_.shard->reduce_scatter_async(reduction.shard, full, ReduceOp::avg);
    comm_.reduce_scatter += storage_bytes(full);
  }
  reductions_.push_back(std::move(reduction));
}

void FsdpModel::drain_reductions() { complete(reductions_); }

void FsdpModel::complete(std::vector<Reduction>& reductions) {
  for (Reduction& reduction : reductions) {
    reduction.work.wait();
    if (groups_.replica) {
      groups_.replica->all_reduce(reduction.shard, ReduceOp::avg);
      comm_.all_reduce += storage_bytes(reduction.shard);
    }
    if (reduction.written) continue;
    at::Tensor& grad = grads_[reduction.unit];
    if (written_[reduction.unit]) {
      grad.add_(reduction.shard);
    } else {
      grad.copy_(reduction.shard);
      written_[reduction.unit] = true;
    }
  }
  reductions.clear();
}

TokenBatch FsdpModel::make_batch(const at::Tensor& input_ids, const at::Tensor& targets) const {
  return make_token_batch(config_, input_ids, targets, inverse_frequencies_, options_.compute_dtype,
                          options_.logp_chunk_tokens);
}

at::Tensor FsdpModel::sequence_logps(const TokenBatch& batch) {
  std::optional<c10::NoGradGuard> forward_only;
  if (options_.frozen) forward_only.emplace();
  differentiating_ = !options_.frozen && at::GradMode::is_enabled();
  keep_until_backward_ = groups_.keeps_gathered_parameters() && differentiating_;
  const auto address = reinterpret_cast<int64_t>(this);
  const auto batch_address = reinterpret_cast<int64_t>(&batch);
  const at::Tensor anchor = at::empty({0}, at::TensorOptions().dtype(options_.compute_dtype)).requires_grad_(true);
  // The embedding's input is the batch's token ids: an empty stand-in (1.13 takes no undefined tensors).
  at::Tensor hidden = UnitFunction::apply(at::empty({0}, batch.input_ids.options()), anchor, address, 0, batch_address);
  for (size_t u = 1; u < units_.size(); ++u) {
    hidden = UnitFunction::apply(hidden, anchor, address, static_cast<int64_t>(u), batch_address);
  }
  differentiating_ = false;
  return hidden;
}

at::Tensor FsdpModel::sequence_logps(const at::Tensor& input_ids, const at::Tensor& targets) {
  return sequence_logps(make_batch(input_ids, targets));
}

}  // namespace st

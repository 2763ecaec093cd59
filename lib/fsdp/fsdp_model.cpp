#include "fsdp/fsdp_model.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>
#include <utility>

#include "distributed/watchdog.h"
#include "fsdp/context_group.h"
#include "fsdp/expert_group.h"
#include "fsdp/unit_function.h"
#include "model/context_split.h"
#include "model/reward_positions.h"
#include "model/rope.h"
#include "util/errors.h"
#include "util/fault_injection.h"
#include "util/host_sync.h"

namespace st {
namespace {

int64_t storage_bytes(const at::Tensor& tensor) { return static_cast<int64_t>(tensor.nbytes()); }

}  // namespace

FsdpModel::FsdpModel(const ModelConfig& config, std::vector<UnitLayout> units, ShardingGroups& groups,
                     std::vector<at::Tensor> master_shards, const FsdpModelOptions& options, FrozenBase base)
    : config_(config),
      units_(std::move(units)),
      base_(std::move(base)),
      groups_(groups),
      options_(options),
      master_(std::move(master_shards)) {
  if (master_.size() != units_.size()) throw ModelError("FSDP: one master shard per unit expected");
  if (units_.size() != unit_count(config_)) throw ModelError("FSDP: the unit layout does not follow the model");
  if (base_.present() && (base_.units.size() != units_.size() || base_.shards.size() != units_.size())) {
    throw ModelError("FSDP: the frozen base needs one unit and one shard per adapter unit");
  }
  if (!options_.recompute.empty() && options_.recompute.size() != run_unit_count(config_)) {
    throw ModelError("FSDP: one recompute policy per unit run expected");
  }
  const int shard_size = groups_.shard->size();
  for (size_t u = 0; u < units_.size(); ++u) {
    if (units_[u].shard_numel * shard_size != units_[u].padded_numel) {
      throw ModelError("FSDP: unit " + units_[u].name + " is laid out for another shard-group size");
    }
    if (master_[u].numel() != units_[u].shard_numel) throw ModelError("FSDP: shard size differs from the unit layout");
    if (!options_.frozen) {
      grads_.push_back(options_.gradients_in_flight_only
                           ? at::Tensor()
                           : at::zeros({units_[u].shard_numel}, at::TensorOptions(grad_dtype()).device(options_.device)));
    }
  }
  written_.assign(grads_.size(), !options_.gradients_in_flight_only);  // zero-initialised above
  attention_kinds_ = model_attention(config_, options_.device);
  context_ = context_exchange_over(groups_.context.get());
  experts_ = expert_exchange_over(groups_.expert.get());
  if (experts_) check_expert_split();
  if (context_ && config_.head == ModelHead::score) {
    throw ConfigError("dist.context_parallel > 1 does not split a reward model's rows yet (its score is read at "
                      "one token per sequence); train a reward model with dist.context_parallel = 1");
  }
  refresh_compute_shards();
}

std::vector<at::Tensor>& FsdpModel::grad_shards() {
  if (options_.frozen) throw ModelError("FSDP: a frozen model has no gradients");
  drain_reductions();
  for (size_t u = 0; u < grads_.size(); ++u) {
    if (!written_[u]) grad_shard(u).zero_();
    written_[u] = true;
  }
  return grads_;
}

void FsdpModel::zero_grad() {
  drain_reductions();
  written_.assign(grads_.size(), false);
}

void FsdpModel::consume_gradients(GradientConsumer consumer) {
  drain_reductions();
  consumer_ = std::move(consumer);
  handed_over_.assign(grads_.size(), false);
  if (!consumer_) return;
  for (at::Tensor& grad : grads_) grad = at::Tensor();  // from now on a unit's shard lives while it is reduced
}

at::Tensor& FsdpModel::grad_shard(size_t unit) {
  at::Tensor& grad = grads_[unit];
  if (grad.defined()) return grad;
  // Only with a consumer, whose pass began with zero_grad (written_ false: the first
  // contribution overwrites). Direct writes cover the unit's elements, so the padding is zeroed.
  const UnitLayout& layout = units_[unit];
  grad = at::empty({layout.shard_numel}, at::TensorOptions(grad_dtype()).device(options_.device));
  const int64_t real = std::clamp<int64_t>(layout.numel - layout.shard_offset(groups_.shard->rank()), 0, layout.shard_numel);
  grad.narrow(0, real, layout.shard_numel - real).zero_();
  return grad;
}

void FsdpModel::hand_over(size_t unit) {
  if (!consumer_ || handed_over_[unit]) return;
  handed_over_[unit] = true;
  if (!written_[unit]) grad_shard(unit).zero_();
  consumer_(unit, grads_[unit]);
  grads_[unit] = at::Tensor();
}

void FsdpModel::check_expert_split() const {
  check_expert_split_geometry(config_, units_, groups_.expert->size());
  if (base_.present()) check_expert_split_geometry(config_, base_.units, groups_.expert->size());
  for (size_t u = run_unit_count(config_); u < base_.quantized.size(); ++u) {
    const QuantizedUnitLayout& layout = base_.quantized[u].layout;
    if (layout.shard_blocks() > 0 || layout.dense_begin != 0 || layout.shard_bytes != layout.dense_bytes()) {
      throw ModelError("FSDP: " + units_[u].name + " of a QLoRA base holds NF4 blocks; the experts stay unquantized");
    }
  }
}

at::Tensor gathered_param_view(const at::Tensor& flat, const ParamSlot& slot, int64_t first) {
  const int64_t offset = slot.offset - first;
  if (offset < 0 || offset + slot.spec.numel() > flat.numel()) return {};
  return flat.narrow(0, offset, slot.spec.numel()).view(slot.spec.shape);
}

bool FsdpModel::splits_experts(size_t unit) const {
  return experts_ != nullptr && unit_role(config_, unit) == UnitRole::experts;
}

Communicator& FsdpModel::group_of(size_t unit) const {
  return splits_experts(unit) ? *groups_.expert_shard : *groups_.shard;
}

int64_t FsdpModel::gathered_first(const UnitLayout& layout, size_t unit) const {
  if (!splits_experts(unit)) return 0;
  // Expert-parallel rank i's holders own the i-th W/P shards of the unit (sharding.h).
  return static_cast<int64_t>(groups_.expert->rank()) * gathered_numel(layout, unit);
}

int64_t FsdpModel::gathered_numel(const UnitLayout& layout, size_t unit) const {
  return layout.shard_numel * group_of(unit).size();
}

void FsdpModel::set_recompute(std::vector<Recompute> plan) {
  if (!plan.empty() && plan.size() != run_unit_count(config_)) throw ModelError("FSDP: one recompute policy per unit run expected");
  options_.recompute = std::move(plan);
}

Recompute FsdpModel::recompute_of(size_t unit) const {
  const UnitRole role = unit_role(config_, unit);
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
  if (casts_per_gather()) return;
  for (const auto& master : master_) compute_.push_back(master.to(options_.device, options_.compute_dtype));
}

bool FsdpModel::casts_per_gather() const {
  return options_.compute_copy == ComputeCopy::per_gather && !master_.empty() &&
         master_.front().device() == options_.device;
}

at::Tensor FsdpModel::compute_shard(size_t unit) const {
  return compute_.empty() ? master_[unit].to(options_.compute_dtype) : compute_[unit];
}

EngineMemory FsdpModel::memory() const {
  EngineMemory memory;
  for (size_t u = 0; u < units_.size(); ++u) {
    memory.params += storage_bytes(master_[u]);
    if (!compute_.empty() && !compute_[u].is_same(master_[u])) memory.params += storage_bytes(compute_[u]);
    if (base_.present()) {
      memory.params += storage_bytes(base_.shards[u]);
      if (base_.shards[u].device() != options_.device) memory.offloaded += storage_bytes(base_.shards[u]);
    }
    if (!options_.frozen && grads_[u].defined()) memory.grads += storage_bytes(grads_[u]);
  }
  memory.gathered_peak = gathered_peak_;
  memory.saved_inputs_peak = saved_inputs_peak_;
  return memory;
}

std::vector<size_t> FsdpModel::units_needed_by(size_t unit) const {
  return units_run_with(config_, unit);
}

void FsdpModel::start_gather(size_t unit) {
  if (gathered_.count(unit)) return;
  // Collective timeouts name the unit; the trainer set the step.
  const ScopedCollectiveContext context(current_collective_context().step, static_cast<int>(unit));
  fault_stall_before_gather(groups_.shard->rank(), current_collective_context().step, unit);
  Gathered& entry = gathered_[unit];
  // An adapter run's embedding and head units hold no adapters, and a base-only pass reads none:
  // nothing of theirs to gather.
  entry.source = compute_shard(unit);
  const bool unread = units_[unit].numel == 0 || !adapters_on_;
  Communicator& group = group_of(unit);
  entry.flat = unread ? entry.source : gather(group, entry.source, entry.work);
  if (base_.present()) entry.base_flat = gather(group, base_.shards[unit], entry.base_work);
  note_gathered_bytes();
  most_alive_ = std::max(most_alive_, static_cast<int64_t>(gathered_.size()));
}

void FsdpModel::note_gathered_bytes() {
  // One rank allocates nothing to gather, but a quantized base's dequantized flats are new.
  if (groups_.shard->size() == 1 && !base_.is_quantized()) return;
  int64_t alive = 0;
  for (const auto& [u, gathered] : gathered_) {
    if (!gathered.flat.is_alias_of(gathered.source)) alive += storage_bytes(gathered.flat);
    // A shard read in place (an embedding's on one rank) is no gathered memory.
    if (gathered.base_flat.defined() && !gathered.base_flat.is_alias_of(base_.shards[u])) {
      alive += storage_bytes(gathered.base_flat);
    }
  }
  gathered_peak_ = std::max(gathered_peak_, alive);
}

// The whole unit is local on one rank: nothing to gather or allocate.
at::Tensor FsdpModel::gather(Communicator& group, const at::Tensor& shard, Work& work) {
  if (group.size() == 1) return shard;
  at::Tensor flat = at::empty({shard.numel() * group.size()}, shard.options());
  work = group.all_gather_into_async(flat, shard);
  comm_.all_gather += storage_bytes(flat);
  return flat;
}

UnitFlats FsdpModel::wait_gathered(size_t unit) {
  UnitFlats flats;
  for (size_t needed : units_needed_by(unit)) {
    start_gather(needed);
    Gathered& entry = gathered_.at(needed);
    entry.work.wait();
    flats.trainable.push_back(entry.flat);
    if (!base_.present()) continue;
    entry.base_work.wait();
    if (base_.is_quantized() && !entry.base_dequantized) {  // once per gather, kept for its backward
      // A split experts unit holds no NF4 block: its shards' bytes are its values, a run of them.
      entry.base_flat = splits_experts(needed)
                            ? entry.base_flat.view(options_.compute_dtype)
                            : dequantize_unit(base_.quantized[needed], entry.base_flat, options_.compute_dtype);
      entry.base_dequantized = true;
      note_gathered_bytes();
    }
    flats.frozen.push_back(entry.base_flat);
  }
  return flats;
}

void FsdpModel::release(size_t unit) { gathered_.erase(unit); }

void FsdpModel::note_saved_input(int64_t bytes) { saved_inputs_ += bytes; }

UnitFlats FsdpModel::acquire_for_forward(size_t unit) {
  UnitFlats flats = wait_gathered(unit);
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
  const UnitRole role = unit_role(config_, unit);
  return role != UnitRole::embedding && recompute_of(unit) != Recompute::none;
}

UnitFlats FsdpModel::acquire_for_backward(size_t unit) {
  UnitFlats flats;
  if (gathers_in_backward(unit)) flats = wait_gathered(unit);
  if (unit > 0 && gathers_in_backward(unit - 1)) {
    for (size_t previous : units_needed_by(unit - 1)) start_gather(previous);
  }
  return flats;
}

std::vector<FsdpModel::GradTarget> FsdpModel::grad_targets(size_t unit) {
  std::vector<GradTarget> targets;
  const bool direct = writes_shards_directly();
  for (size_t needed : units_needed_by(unit)) {
    GradTarget target;
    target.unit = needed;
    target.direct = direct;
    if (direct) {
      target.flat = grad_shard(needed);
      target.overwrite = !written_[needed];
      written_[needed] = true;
    } else if (units_[needed].numel == 0) {
      target.flat = at::empty({0}, at::TensorOptions(at::kFloat).device(options_.device));  // nothing to reduce
    } else {
      // The elements this rank's group reduces (a run of experts under expert parallelism), the
      // padding past the unit's parameters zero.
      const int64_t size = gathered_numel(units_[needed], needed);
      const int64_t real = std::clamp<int64_t>(units_[needed].numel - gathered_first(units_[needed], needed), 0, size);
      target.flat = at::empty({size}, at::TensorOptions(at::kFloat).device(options_.device));
      target.flat.narrow(0, real, size - real).zero_();
      most_gradient_buffers_alive_ = std::max(most_gradient_buffers_alive_, ++gradient_buffers_alive_);
    }
    targets.push_back(std::move(target));
  }
  return targets;
}

void FsdpModel::finish_backward(size_t unit, std::vector<GradTarget>& targets) {
  std::vector<Reduction> previous;
  previous.swap(reductions_);
  // A unit's own backward is its last contribution, and a sparse layer's its experts unit's.
  const auto last = [&](size_t target) { return target == unit || unit_role(config_, target) == UnitRole::experts; };
  for (GradTarget& target : targets) {
    if (!target.direct && units_[target.unit].numel > 0) start_reduction(target.unit, target.flat, last(target.unit));
  }
  complete(previous);  // while this unit's reductions are in flight
  for (size_t needed : units_needed_by(unit)) {
    if (writes_shards_directly() && last(needed)) hand_over(needed);
  }
  for (size_t gathered : units_needed_by(unit)) {
    // A kept embedding serves the embedding unit's backward, still to come.
    if (gathered == unit || !keep_until_backward_) release(gathered);
  }
  if (unit == 0) {  // the last unit of a backward pass
    drain_reductions();
    gathered_.clear();
    for (size_t u = 0; consumer_ && u < grads_.size(); ++u) hand_over(u);  // units nothing reached
    handed_over_.assign(handed_over_.size(), false);
  }
}

void FsdpModel::start_reduction(size_t unit, const at::Tensor& flat_grad, bool last) {
  Reduction reduction{unit, {}, {}};
  reduction.last = last;
  const ScopedCollectiveContext context(current_collective_context().step, static_cast<int>(unit));
  const at::Tensor full = flat_grad.to(options_.reduce_dtype).contiguous();
  // The step's first contribution is reduced straight into the shard, later ones added.
  reduction.written = !written_[unit] && full.scalar_type() == grad_dtype();
  if (reduction.written) written_[unit] = true;
  Communicator& group = group_of(unit);
  if (group.size() == 1) {
    reduction.shard = reduction.written ? grad_shard(unit).copy_(full) : full;
  } else {
    reduction.shard = reduction.written ? grad_shard(unit) : at::empty({units_[unit].shard_numel}, full.options());
    reduction.work = group.reduce_scatter_async(reduction.shard, full, ReduceOp::sum);
    comm_.reduce_scatter += storage_bytes(full);
  }
  reductions_.push_back(std::move(reduction));
}

void FsdpModel::drain_reductions() { complete(reductions_); }

void FsdpModel::complete(std::vector<Reduction>& reductions) {
  for (Reduction& reduction : reductions) {
    reduction.work.wait();
    if (groups_.replica) {
      const ScopedCollectiveContext context(current_collective_context().step, static_cast<int>(reduction.unit));
      groups_.replica->all_reduce(reduction.shard, ReduceOp::sum);
      comm_.all_reduce += storage_bytes(reduction.shard);
    }
    if (!reduction.written) {
      at::Tensor& grad = grad_shard(reduction.unit);
      if (written_[reduction.unit]) {
        grad.add_(reduction.shard);
      } else {
        grad.copy_(reduction.shard);
        written_[reduction.unit] = true;
      }
    }
    if (reduction.last) hand_over(reduction.unit);
    --gradient_buffers_alive_;
  }
  reductions.clear();
}

TokenBatch FsdpModel::make_batch(const at::Tensor& input_ids, const at::Tensor& targets, const RowLayout& layout,
                                 const at::Tensor& token_weights) const {
  if (context_ && config_.experts.num_experts > 0) {
    throw ConfigError("dist.context_parallel: a model with experts is not split across ranks yet; set "
                      "dist.context_parallel = 1");
  }
  if (context_) {
    return make_context_token_batch(input_ids, targets, attention_kinds_, options_.compute_dtype,
                                    options_.logp_chunk_tokens, layout, context_);
  }
  TokenBatch batch = make_token_batch(input_ids, targets, attention_kinds_, options_.compute_dtype,
                                      options_.logp_chunk_tokens, layout, options_.attention);
  if (config_.head == ModelHead::score) {
    batch.reward_positions =
        to_device_async(reward_positions(input_ids, targets, layout, config_.pad_token_id), options_.device);
  }
  batch.experts = experts_;
  if (config_.experts.num_experts > 0 && token_weights.defined()) {
    batch.token_weights = to_device_async(token_weights.reshape(-1).to(at::kFloat), options_.device);
  }
  return batch;
}

at::Tensor FsdpModel::sequence_logps(const TokenBatch& batch) {
  std::optional<c10::NoGradGuard> forward_only;
  if (options_.frozen) forward_only.emplace();
  differentiating_ = !options_.frozen && at::GradMode::is_enabled();
  keep_until_backward_ = groups_.keeps_gathered_parameters() && differentiating_;
  if (!base_.present()) return run_units(batch);
  TokenBatch adapted = batch;
  adapted.adapter = options_.adapter;
  const int64_t step = current_collective_context().step;
  if (step != pass_step_) passes_in_step_ = 0;
  pass_step_ = step;
  // The same seed in a recompute of this pass; another one for each pass of a step.
  adapted.adapter.dropout_seed = static_cast<int64_t>(static_cast<uint64_t>(options_.adapter.dropout_seed) * 1000003u +
                                                      static_cast<uint64_t>(step) * 4099u +
                                                      static_cast<uint64_t>(passes_in_step_++));
  if (!differentiating_) adapted.adapter.dropout = 0.0;
  return run_units(adapted);
}

at::Tensor FsdpModel::base_sequence_logps(const TokenBatch& batch) {
  if (!base_.present()) throw ModelError("FSDP: only an adapter run has a base to run alone");
  const c10::NoGradGuard forward_only;
  differentiating_ = false;
  keep_until_backward_ = false;
  struct AdaptersBackOn {
    bool& on;
    ~AdaptersBackOn() { on = true; }
  } back_on{adapters_on_};
  adapters_on_ = false;
  return run_units(batch);
}

at::Tensor FsdpModel::run_units(const TokenBatch& batch) {
  const at::Tensor anchor = at::empty({0}, at::TensorOptions().dtype(options_.compute_dtype)).requires_grad_(true);
  const auto held = c10::make_intrusive<HeldBatch>(batch);
  if (differentiating_ && batch.token_weights.defined()) held->tally = c10::make_intrusive<RouterTally>(config_, batch.token_weights);
  last_tally_ = held->tally;
  // The embedding's input is the batch's token ids: an empty stand-in (1.13 takes no undefined tensors).
  at::Tensor hidden = apply_unit(*this, 0, at::empty({0}, batch.input_ids.options()), anchor, held);
  for (size_t u = 1; u < run_unit_count(config_); ++u) hidden = apply_unit(*this, u, hidden, anchor, held);
  if (differentiating_) {
    saved_inputs_peak_ = std::max(saved_inputs_peak_, saved_inputs_);
    saved_inputs_ = 0;
  }
  differentiating_ = false;
  // Each rank's lines hold its chunks' targets: the group's lines, for sums then summed along
  // each sequence.
  if (!batch.positions.context) return hidden;
  const at::Tensor lines = sum_over_context(batch.positions.context, hidden);
  return batch.head_output == HeadOutput::sequence_sums ? lines.sum(1) : lines;
}

RouterLoss FsdpModel::router_loss(const at::Tensor& output) {
  if (!last_tally_) {
    throw ModelError("router loss: the last forward was not differentiated or had no token weights (make_batch)");
  }
  return st::router_loss(std::exchange(last_tally_, {}), output, {groups_.shard.get(), groups_.replica.get()});
}

at::Tensor FsdpModel::sequence_logps(const at::Tensor& input_ids, const at::Tensor& targets,
                                     const RowLayout& layout) {
  return sequence_logps(make_batch(input_ids, targets, layout));
}

}  // namespace st

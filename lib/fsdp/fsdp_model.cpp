#include "fsdp/fsdp_model.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <optional>

#include "fsdp/unit_shards.h"
#include "model/hf_names.h"
#include "model/llama_blocks.h"
#include "model/token_logp.h"
#include "util/errors.h"

namespace st {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// Runs unit `u` (embedding, a layer, or the head) on `input`; `flats` are its gathered
// parameters (and the embedding's, for a tied head).
at::Tensor run_unit(FsdpModel& model, size_t u, const std::vector<at::Tensor>& flats,
                    const at::Tensor& input, const at::Tensor& targets) {
  const ModelConfig& config = model.config();
  const auto& units = model.units();
  const TensorMap params = unit_param_views(units[u], flats[0]);
  if (u == 0) return at::embedding(params.at(kEmbedName), input);
  if (u + 1 < units.size()) {
    const RopeTables rope = make_rope_tables(config, input.size(1), input.options());
    return decoder_layer(layer_weights(params, config, static_cast<int64_t>(u - 1)), input, rope, config);
  }
  const at::Tensor normed = rms_norm(input, params.at(kFinalNormName), config.rms_norm_eps);
  const at::Tensor head = config.tie_word_embeddings
                              ? unit_param_views(units[0], flats[1]).at(kEmbedName)
                              : params.at(kLmHeadName);
  const at::Tensor logps = chunked_token_logps(normed.reshape({-1, normed.size(2)}), head,
                                               targets.reshape({-1}), model.options().logp_chunk_tokens);
  return logps.view(targets.sizes()).sum(1).to(at::kFloat);
}

// One unit as an autograd node: forward without saving activations, backward by recompute.
// `anchor` is an empty tensor that requires grad, so the embedding unit (whose real input, the
// token ids, needs none) still gets a backward call.
class UnitFunction : public torch::autograd::Function<UnitFunction> {
 public:
  static at::Tensor forward(AutogradContext* context, const at::Tensor& input, const at::Tensor& anchor,
                            const at::Tensor& targets, int64_t model_address, int64_t unit) {
    auto& model = *reinterpret_cast<FsdpModel*>(model_address);
    context->saved_data["model"] = model_address;
    context->saved_data["unit"] = unit;
    context->save_for_backward({input, targets});
    (void)anchor;
    const auto u = static_cast<size_t>(unit);
    const at::Tensor output = run_unit(model, u, model.acquire_for_forward(u), input, targets);
    model.finish_forward(u);
    return output;  // grad mode is off inside forward: nothing of the unit is kept
  }

  static tensor_list backward(AutogradContext* context, tensor_list grads) {
    auto& model = *reinterpret_cast<FsdpModel*>(context->saved_data["model"].toInt());
    const auto u = static_cast<size_t>(context->saved_data["unit"].toInt());
    const auto saved = context->get_saved_variables();
    std::vector<at::Tensor> flats;
    for (const at::Tensor& flat : model.acquire_for_backward(u)) {
      flats.push_back(flat.detach().requires_grad_(true));
    }
    const bool input_is_hidden = u > 0;
    const at::Tensor input = input_is_hidden ? saved[0].detach().requires_grad_(true) : saved[0];
    at::Tensor output;
    {
      at::AutoGradMode enable(true);
      output = run_unit(model, u, flats, input, saved[1]);
    }
    std::vector<at::Tensor> wrt = flats;
    if (input_is_hidden) wrt.push_back(input);
    auto results = torch::autograd::grad({output}, wrt, {grads[0]}, /*retain_graph=*/false,
                                         /*create_graph=*/false, /*allow_unused=*/true);
    const at::Tensor input_grad = input_is_hidden ? results.back() : at::Tensor();
    results.resize(flats.size());
    model.finish_backward(u, results);
    return {input_grad, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

int64_t storage_bytes(const at::Tensor& tensor) { return static_cast<int64_t>(tensor.nbytes()); }

}  // namespace

FsdpModel::FsdpModel(const ModelConfig& config, std::vector<UnitLayout> units, ShardingGroups& groups,
                     std::vector<at::Tensor> master_shards, const FsdpModelOptions& options)
    : config_(config), units_(std::move(units)), groups_(groups), options_(options), master_(std::move(master_shards)) {
  if (master_.size() != units_.size()) throw ModelError("FSDP: one master shard per unit expected");
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
  refresh_compute_shards();
}

std::vector<at::Tensor>& FsdpModel::grad_shards() {
  if (options_.frozen) throw ModelError("FSDP: a frozen model has no gradients");
  drain_reductions();
  return grads_;
}

void FsdpModel::zero_grad() {
  drain_reductions();
  for (auto& grad : grads_) grad.zero_();
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

std::vector<at::Tensor> FsdpModel::acquire_for_backward(size_t unit) {
  std::vector<at::Tensor> flats = wait_gathered(unit);
  if (unit > 0) {
    for (size_t previous : units_needed_by(unit - 1)) start_gather(previous);
  }
  return flats;
}

void FsdpModel::finish_backward(size_t unit, const std::vector<at::Tensor>& flat_grads) {
  std::vector<Reduction> previous;
  previous.swap(reductions_);
  const std::vector<size_t> needed = units_needed_by(unit);
  for (size_t i = 0; i < needed.size(); ++i) start_reduction(needed[i], flat_grads[i]);
  complete(previous);  // while this unit's reductions are in flight
  for (size_t gathered : needed) {
    // A kept embedding serves the embedding unit's backward, still to come.
    if (gathered == unit || !keep_until_backward_) release(gathered);
  }
  if (unit == 0) {  // the last unit of a backward pass
    drain_reductions();
    gathered_.clear();
  }
}

void FsdpModel::start_reduction(size_t unit, const at::Tensor& flat_grad) {
  if (!flat_grad.defined()) return;
  Reduction reduction{unit, {}, {}};
  const at::Tensor full = flat_grad.to(options_.reduce_dtype).contiguous();
  if (groups_.shard->size() == 1) {
    reduction.shard = full;
  } else {
    reduction.shard = at::empty({units_[unit].shard_numel}, full.options());
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
    grads_[reduction.unit].add_(reduction.shard.to(at::kFloat));
  }
  reductions.clear();
}

at::Tensor FsdpModel::sequence_logps(const at::Tensor& input_ids, const at::Tensor& targets) {
  std::optional<c10::NoGradGuard> forward_only;
  if (options_.frozen) forward_only.emplace();
  keep_until_backward_ = groups_.keeps_gathered_parameters() && at::GradMode::is_enabled();
  const auto address = reinterpret_cast<int64_t>(this);
  const at::Tensor anchor = at::empty({0}, at::TensorOptions().dtype(options_.compute_dtype)).requires_grad_(true);
  at::Tensor hidden = UnitFunction::apply(input_ids, anchor, targets, address, 0);
  for (size_t u = 1; u < units_.size(); ++u) {
    hidden = UnitFunction::apply(hidden, anchor, targets, address, static_cast<int64_t>(u));
  }
  return hidden;
}

}  // namespace st

#include "fsdp/fsdp_engine.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <thread>

#include "optim/grad_clip.h"
#include "util/errors.h"
#include "util/host_sync.h"
#include "util/timer.h"
#include "util/torch_compat.h"

namespace st {
namespace {

bool offloaded(const EngineOptions& options) { return options.optim.offload == Offload::cpu; }

int host_threads(int requested) {
  if (requested > 0) return requested;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

double StepOutcome::read_loss() const { return read_to_host(loss).item<double>(); }

double StepOutcome::read_grad_norm() const {
  return grad_norm.defined() ? read_to_host(grad_norm).item<double>() : 0.0;
}

FsdpEngine::FsdpEngine(ModelShards shards, ShardingGroups& groups, const EngineOptions& options)
    : groups_(groups), options_(options), scaler_(options.scaler) {
  const at::Device state_device = offloaded(options) ? at::Device(at::kCPU) : options.model.device;
  for (at::Tensor& master : shards.masters) master = master.to(state_device);
  FsdpModelOptions model_options = options.model;
  model_options.gradients_in_flight_only = options.optim.step_in_backward;
  model_ = std::make_unique<FsdpModel>(shards.config, shards.units, groups, std::move(shards.masters), model_options,
                                       std::move(shards.base));
  optimizer_ = std::make_unique<ShardedAdamW>(weight_decay_ranges(model_->units(), groups.shard->rank()), options.optim,
                                              model_->master_shards(), host_threads(options.offload_threads));
}

EngineMemory FsdpEngine::memory() const {
  EngineMemory memory = model_->memory();
  memory.optimizer = optimizer_->state_bytes();
  if (offloaded(options_)) {
    for (const at::Tensor& master : model_->master_shards()) memory.offloaded += static_cast<int64_t>(master.nbytes());
    memory.offloaded += memory.optimizer;
  }
  return memory;
}

bool FsdpEngine::gradients_overflowed(CommBytes& comm) {
  at::Tensor bad = at::zeros({1}, at::TensorOptions(at::kFloat).device(options_.model.device));
  for (const at::Tensor& grad : model_->grad_shards()) bad += at::logical_not(at::isfinite(grad)).any();
  if (groups_.shard->size() > 1) {
    groups_.shard->all_reduce(bad, ReduceOp::max);
    comm.all_reduce += static_cast<int64_t>(bad.nbytes());
  }
  return read_to_host(bad).item<float>() > 0.0f;  // fp16 only: its one read per step
}

StepOutcome FsdpEngine::step_in_backward(const MicroBatchLoss& loss, double lr) {
  StepOutcome outcome;
  model_->comm_bytes() = {};
  model_->zero_grad();
  optimizer_->begin_step(lr);
  const std::vector<at::Tensor> copies = model_->compute_copies();
  const size_t units = model_->units().size();
  // Each unit's sum of squares apart, added in unit order after backward: global_grad_clip's sum.
  std::vector<at::Tensor> squares(units);
  bool copies_written = !copies.empty();
  Timer phase;
  double optimizer_seconds = 0.0;
  model_->consume_gradients([&](size_t unit, const at::Tensor& grad) {
    const Timer update;
    squares[unit] = at::zeros({1}, at::TensorOptions(at::kDouble).device(grad.device()));
    add_sum_of_squares(grad, squares[unit]);
    const bool written = optimizer_->step_unit(unit, model_->master_shards()[unit], grad,
                                               copies.empty() ? at::Tensor() : copies[unit]);
    copies_written = copies_written && written;
    optimizer_seconds += update.seconds();
  });
  struct ConsumerOff {
    FsdpModel& model;
    ~ConsumerOff() { model.consume_gradients({}); }
  } consumer_off{*model_};
  const at::Tensor value = loss(*model_, 0);
  outcome.loss = value.detach().to(at::kDouble);
  if (options_.sync_phases) compat::synchronize_compute(options_.model.device);
  outcome.phases.forward = phase.seconds();
  phase.reset();
  torch::autograd::backward({value});
  if (options_.sync_phases) compat::synchronize_compute(options_.model.device);
  outcome.phases.backward = phase.seconds() - optimizer_seconds;
  outcome.phases.optimizer = optimizer_seconds;
  phase.reset();
  at::Tensor norm = at::zeros({1}, at::TensorOptions(at::kDouble).device(options_.model.device));
  for (const at::Tensor& unit_squares : squares) norm.add_(unit_squares);
  groups_.shard->all_reduce(norm, ReduceOp::sum);
  outcome.grad_norm = norm.sqrt_();
  model_->refresh_compute_shards(copies_written);
  outcome.comm = model_->comm_bytes();
  if (groups_.shard->size() > 1) outcome.comm.all_reduce += static_cast<int64_t>(sizeof(double));
  outcome.phases.optimizer += phase.seconds();
  return outcome;
}

StepOutcome FsdpEngine::step(int64_t micro_batches, const MicroBatchLoss& loss, double lr) {
  if (micro_batches < 1) throw ConfigError("a step needs at least one micro-batch");
  if (options_.optim.step_in_backward) {
    if (micro_batches != 1 || options_.loss_scaling || options_.optim.grad_clip > 0.0) {
      throw ConfigError("optim.step_in_backward = true needs one micro-batch per step (this one has " +
                        std::to_string(micro_batches) + "), no fp16 loss scaling and optim.grad_clip = 0");
    }
    return step_in_backward(loss, lr);
  }
  StepOutcome outcome;
  model_->comm_bytes() = {};
  CommBytes engine_comm;  // the engine's own collectives; the model counts its gathers and reductions
  model_->zero_grad();
  const double scale = options_.loss_scaling ? scaler_.scale() : 1.0;
  Timer phase;
  const auto phase_end = [&](double& seconds) {
    if (options_.sync_phases) compat::synchronize_compute(options_.model.device);
    seconds += phase.seconds();
    phase.reset();
  };
  at::Tensor loss_sum;  // on the loss's device, read once: a read per micro-batch stalls a GPU's queue
  for (int64_t index = 0; index < micro_batches; ++index) {
    const at::Tensor value = loss(*model_, index);
    const at::Tensor share = value.detach().to(at::kDouble);
    loss_sum = index == 0 ? share : loss_sum + share;
    phase_end(outcome.phases.forward);
    torch::autograd::backward({options_.loss_scaling ? value * scale : value});
    phase_end(outcome.phases.backward);
  }
  outcome.loss = loss_sum;
  std::vector<at::Tensor>& grads = model_->grad_shards();
  phase_end(outcome.phases.grad_sync);
  if (options_.loss_scaling) {
    outcome.skipped = gradients_overflowed(engine_comm);
    scaler_.update(outcome.skipped);
  }
  if (!outcome.skipped) {
    // Unscaling (fp16) and clipping are one factor, applied inside the update.
    const GradClip clip = global_grad_clip(grads, options_.optim.grad_clip, *groups_.shard, 1.0 / scale);
    outcome.grad_norm = clip.norm;
    if (groups_.shard->size() > 1) engine_comm.all_reduce += static_cast<int64_t>(sizeof(double));
    const bool copies_written =
        optimizer_->step(model_->master_shards(), grads, lr, clip.scale, model_->compute_copies());
    model_->refresh_compute_shards(copies_written);
  }
  phase_end(outcome.phases.optimizer);
  outcome.comm = model_->comm_bytes();
  outcome.comm.all_reduce += engine_comm.all_reduce;
  return outcome;
}

}  // namespace st

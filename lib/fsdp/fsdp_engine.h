// One optimizer step of the sharded model: gradient accumulation over micro-batches, optional
// dynamic loss scaling (fp16; skipped steps), global grad-norm clipping, sharded AdamW (on the
// host with offload), and the refresh of the compute-dtype shards. With optim.step_in_backward
// each unit is updated inside backward as its gradient shard is ready (one micro-batch, no
// clipping or loss scaling): the same numbers, without a full set of gradient shards. Reports the step's
// collective bytes and the engine's memory by category. Objectives live with the caller.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>

#include "fsdp/engine_stats.h"
#include "fsdp/fsdp_model.h"
#include "fsdp/shard_source.h"
#include "fsdp/sharding.h"
#include "optim/loss_scaler.h"
#include "optim/optim_options.h"
#include "optim/sharded_adamw.h"

namespace st {

struct EngineOptions {
  FsdpModelOptions model;
  OptimOptions optim;
  bool loss_scaling = false;  // dynamic loss scaling; needed for fp16 compute
  LossScalerOptions scaler;
  int offload_threads = 0;  // host threads of the offloaded update; 0 = all cores
  bool sync_phases = false;  // sync the device at phase ends so StepOutcome::phases are exact on a GPU
};

// The loss and the norm stay on the device: reading them waits for the step's queued work, so
// the trainer reads them only when it logs.
struct StepOutcome {
  at::Tensor loss;       // [] fp64: this rank's share of the step's loss (unscaled; summed over ranks, the loss)
  at::Tensor grad_norm;  // [1] fp64: global, before clipping; undefined for a skipped step
  bool skipped = false;  // fp16 overflow: no update this step
  CommBytes comm;        // collective payload bytes of this step on this rank
  StepPhases phases;     // engine phases (data and reference stay 0: the trainer times them)

  double read_loss() const;       // host reads (util/host_sync.h)
  double read_grad_norm() const;  // 0 for a skipped step
};

// This rank's share of the step's loss from micro-batch `index`: its summed loss already divided
// by the step's global count (normalised once, by the caller). The engine adds the shares up,
// over micro-batches and over the data-parallel ranks (the reductions sum), dividing by nothing.
using MicroBatchLoss = std::function<at::Tensor(FsdpModel& model, int64_t index)>;

class FsdpEngine {
 public:
  // `shards` laid out for groups.shard->size() (shard_source.h).
  FsdpEngine(ModelShards shards, ShardingGroups& groups, const EngineOptions& options);

  // Collective over the groups.
  StepOutcome step(int64_t micro_batches, const MicroBatchLoss& loss, double lr);

  FsdpModel& model() { return *model_; }
  ShardedAdamW& optimizer() { return *optimizer_; }
  DynamicLossScaler& scaler() { return scaler_; }
  EngineMemory memory() const;

 private:
  bool gradients_overflowed(CommBytes& comm);  // collective; counts its all-reduce in `comm`
  StepOutcome step_in_backward(const MicroBatchLoss& loss, double lr);

  ShardingGroups& groups_;
  EngineOptions options_;
  std::unique_ptr<FsdpModel> model_;
  std::unique_ptr<ShardedAdamW> optimizer_;
  DynamicLossScaler scaler_;
};

}  // namespace st

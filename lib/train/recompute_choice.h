// train.recompute resolved for a run: the per-unit policy (fsdp/recompute.h) for the largest
// micro-batch the run's data settings allow, and for auto the budget it may fill: the GPU's
// free memory once the model states are in place, less the step's working set and a margin
// (or train.memory_budget_gib less what is allocated); unlimited on the CPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fsdp/memory_estimate.h"
#include "fsdp/recompute.h"
#include "hf/model_config.h"
#include "train/train_config.h"

namespace st {

struct RecomputeChoice {
  std::vector<Recompute> plan;  // per unit
  std::string reason;           // "auto: 3.2 GiB budget" for the log and the dry run
};

// The estimate's inputs for this run, but the micro-batch.
EstimateInputs run_estimate_inputs(const TrainConfig& config, int shard_group_size, int64_t compute_bytes);

// data.micro_batch_tokens = -1 (auto, packed rows): the largest of 16384, 8192, ... tokens (never
// below the longest segment) whose working set with full recompute (the estimate's gathered
// units, saved inputs, one layer's recompute, the head, the margin) takes at most 3/4 of
// `available_bytes`, the rest left for what recompute = auto keeps; 4096 on the CPU
// (available < 0). `in` holds everything but the micro-batch. Other values come back as they are.
constexpr int64_t kTokenBudgetCeiling = 16384, kCpuTokenBudget = 4096;
int64_t fit_micro_batch_tokens(const ModelConfig& model, EstimateInputs in, Stage stage, const DataOptions& data,
                               bool share_prompt, AttentionPath attention, int64_t available_bytes);
// A run's budget: `available_bytes` as device_available_bytes gives it.
int64_t fit_micro_batch_tokens(const TrainConfig& config, const ModelConfig& model, int shard_group_size,
                               int64_t compute_bytes, int64_t available_bytes);
// Device bytes the step may use now: train.memory_budget_gib less what is allocated, else the
// GPU's free memory, at least 0; < 0 only on the CPU (cuda_device < 0).
int64_t device_available_bytes(const TrainConfig& config, int cuda_device);

// `budget_bytes` for auto (< 0 = unlimited): device_budget_bytes() on a GPU.
RecomputeChoice choose_recompute(const TrainConfig& config, const ModelConfig& model, int shard_group_size,
                                 int64_t compute_bytes, int64_t budget_bytes);
// Bytes auto may fill on `cuda_device` now (< 0 on the CPU, cuda_device < 0).
int64_t device_budget_bytes(const TrainConfig& config, const ModelConfig& model, int shard_group_size,
                            int64_t compute_bytes, int cuda_device);

}  // namespace st

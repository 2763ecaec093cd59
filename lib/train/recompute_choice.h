// train.recompute resolved for a run: the per-unit policy (fsdp/recompute.h) for the largest
// micro-batch the run's data settings allow, and for auto the budget it may fill: the GPU's
// free memory once the model states are in place, less the step's working set and a margin
// (or train.memory_budget_gib less what is allocated); unlimited on the CPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fsdp/recompute.h"
#include "model/model_config.h"
#include "train/train_config.h"

namespace st {

struct RecomputeChoice {
  std::vector<Recompute> plan;  // per unit
  std::string reason;           // "auto: 3.2 GiB budget" for the log and the dry run
};

// `budget_bytes` for auto (< 0 = unlimited): device_budget_bytes() on a GPU.
RecomputeChoice choose_recompute(const TrainConfig& config, const ModelConfig& model, int shard_group_size,
                                 int64_t compute_bytes, int64_t budget_bytes);
// Bytes auto may fill on `cuda_device` now (< 0 on the CPU, cuda_device < 0).
int64_t device_budget_bytes(const TrainConfig& config, const ModelConfig& model, int shard_group_size,
                            int64_t compute_bytes, int cuda_device);

}  // namespace st

// The memory estimate as `shardtune estimate` and `train --dry-run` print it: model states per
// rank by kind, gathered buffers, activations, per GPU (with the fit against gpu_gib when > 0)
// and per host.
#pragma once

#include <string>

#include "data/data_options.h"
#include "fsdp/memory_estimate.h"
#include "hf/model_config.h"
#include "model/model_options.h"
#include "train/train_config.h"
#include "train/train_options.h"

namespace st {

// data.micro_batch_tokens = -1 (auto) resolved into `data` as a run would on a device of
// in.device_bytes (80 GiB when 0) once the model states are in place (CPU: the CPU budget);
// returns the line that says so, "" when the budget is not auto.
std::string resolve_token_budget(const ModelConfig& config, const EstimateInputs& in, Stage stage, DataOptions& data,
                                 bool share_prompt, AttentionPath attention);

// One mapping from the train keys to an estimate, for `shardtune estimate` and `train --dry-run`:
// `config` on `nodes` x `ranks_per_node` ranks in the compute dtype `on_gpu` resolves, its
// micro-batch sized (token_budget: resolve_token_budget's line).
struct EstimatePlan {
  EstimateInputs inputs;
  std::string token_budget;
};
EstimatePlan estimate_plan(const ModelConfig& model, const TrainConfig& config, int64_t nodes, int64_t ranks_per_node,
                           bool on_gpu);

std::string format_memory_report(const ModelConfig& config, const std::string& model, const EstimateInputs& in,
                                 const MemoryEstimate& estimate, double gpu_gib);

}  // namespace st

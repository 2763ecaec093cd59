#include "train/recompute_choice.h"

#include <algorithm>
#include <cstdio>

#include "fsdp/memory_estimate.h"
#include "train/train_plan.h"
#include "util/text.h"
#include "util/torch_compat.h"

namespace st {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

RecomputeChoice choose_recompute(const TrainConfig& config, const ModelConfig& model, int shard_group_size,
                                 int64_t compute_bytes, int64_t budget_bytes) {
  RecomputePlanInputs inputs;
  inputs.policy = config.train.recompute;
  inputs.tokens = largest_micro_batch(config).tokens();
  inputs.compute_bytes = compute_bytes;
  inputs.budget_bytes = budget_bytes;
  inputs.gathered_layer_bytes =
      kept_gathered_layer_bytes(model, shard_group_size, config.dist.sharding, compute_bytes);
  RecomputeChoice choice;
  choice.plan = plan_recompute(model, inputs);
  choice.reason = std::string(enum_name(config.train.recompute)) + " -> " + describe_recompute_plan(choice.plan);
  if (inputs.policy == Recompute::automatic) {
    choice.reason += budget_bytes < 0 ? " (no memory limit on the CPU)"
                                      : " (" + gib_text(budget_bytes) + " for kept activations, " +
                                            std::to_string(inputs.tokens) + " tokens per micro-batch)";
  }
  return choice;
}

int64_t fit_micro_batch_tokens(const ModelConfig& model, EstimateInputs in, Stage stage, const DataOptions& data,
                               bool share_prompt, AttentionPath attention, int64_t available_bytes) {
  if (data.micro_batch_tokens != kAutoMicroBatchTokens) return data.micro_batch_tokens;
  const int64_t longest_segment = longest_segment_tokens(stage, data, share_prompt);
  if (available_bytes < 0) return std::max(kCpuTokenBudget, longest_segment);
  DataOptions sized = data;
  in.recompute = Recompute::full;
  for (int64_t tokens = kTokenBudgetCeiling;; tokens /= 2) {
    sized.micro_batch_tokens = std::max(tokens, longest_segment);
    set_micro_batch(in, largest_micro_batch(stage, 1, sized, share_prompt, attention));
    const MemoryEstimate estimate = estimate_memory(model, in);
    const int64_t working = estimate.gathered + estimate.activations + kRecomputeMarginBytes;
    if (4 * working <= 3 * available_bytes || tokens <= longest_segment) return sized.micro_batch_tokens;
  }
}

EstimateInputs run_estimate_inputs(const TrainConfig& config, int shard_group_size, int64_t compute_bytes) {
  EstimateInputs in;
  in.compute_bytes = compute_bytes;
  in.logp_chunk_tokens = config.model.logp_chunk_tokens;
  in.ranks_per_node = shard_group_size;
  in.adapters = adapter_shape(config);
  in.compute_copy = config.train.compute_copy;
  in.context_parallel = config.dist.context_parallel;
  in.expert_parallel = config.dist.expert_parallel;
  return in;
}

int64_t fit_micro_batch_tokens(const TrainConfig& config, const ModelConfig& model, int shard_group_size,
                               int64_t compute_bytes, int64_t available_bytes) {
  return fit_micro_batch_tokens(model, run_estimate_inputs(config, shard_group_size, compute_bytes), config.train.stage,
                                config.data, config.dpo.share_prompt, config.model.attention, available_bytes);
}

int64_t device_available_bytes(const TrainConfig& config, int cuda_device) {
  if (cuda_device < 0) return -1;
  const int64_t available =
      config.train.memory_budget_gib > 0.0
          ? static_cast<int64_t>(config.train.memory_budget_gib * kGiB) - compat::allocated_gpu_memory_bytes(cuda_device)
          : compat::free_gpu_memory_bytes(cuda_device);
  return std::max<int64_t>(0, available);  // < 0 means the CPU
}

int64_t device_budget_bytes(const TrainConfig& config, const ModelConfig& model, int shard_group_size,
                            int64_t compute_bytes, int cuda_device) {
  if (cuda_device < 0) return -1;
  EstimateInputs in = run_estimate_inputs(config, shard_group_size, compute_bytes);
  set_micro_batch(in, largest_micro_batch(config));
  const MemoryEstimate estimate = estimate_memory(model, in);
  const int64_t working = estimate.gathered + estimate.activations + kRecomputeMarginBytes;
  return std::max<int64_t>(0, device_available_bytes(config, cuda_device) - working);
}

}  // namespace st

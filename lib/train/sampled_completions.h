// The sampling source of an online objective: a generation's completions drawn on the training
// ranks from the policy as the step starts. The whole model is gathered once per generation in
// the compute dtype (fsdp/whole_model.h) and freed after; each prompt is prefilled once and its
// cache forked to its group (model/generation.h). TRL's sampling settings (the section's
// temperature, top_p, top_k, min_p; logits_warpers.h); a completion ends at EOS (kept) or at
// max_completion_length tokens.
// Completion j of the generation's prompt p is request p x G + j of that generation; its generator
// is seeded by (train.seed, generation, request), so the rollouts do not depend on the rank count
// or the batching, and a resumed run draws what the uninterrupted one drew.
#pragma once

#include <cstdint>
#include <vector>

#include "distributed/communicator.h"
#include "fsdp/fsdp_model.h"
#include "model/generation.h"
#include "train/rollout_options.h"

namespace st {

// Throws ConfigError when sampling `rows` completions of up to `tokens` tokens each (prompt and
// completion) needs more than `available_bytes` on a rank (device_available_bytes; < 0 on the
// CPU: no limit), naming the estimate (estimate_sampling_memory) and the settings that lower it.
void check_sampling_memory(const ModelConfig& config, int64_t rows, int64_t tokens, int64_t compute_bytes,
                           int64_t available_bytes, const RolloutOptions& options);

class SampledCompletions {
 public:
  SampledCompletions(const RolloutOptions& options, uint64_t seed, std::vector<int64_t> eos_ids);

  // Collective over the world (`host`: on the CPU backend). Completions [first, first + count) of
  // generation `generation` (each prompt's group_size completions in a row); `prompts` are the
  // ones they come from, the generation's prompts first / group_size onwards.
  std::vector<GenerationResult> sample(FsdpModel& model, Communicator& host,
                                       const std::vector<std::vector<int64_t>>& prompts, int64_t generation,
                                       int64_t first, int64_t count) const;

 private:
  GenerationOptions options_;
  uint64_t seed_;
};

}  // namespace st

// The sampling source of an online objective: a generation's completions drawn on the training
// ranks from the policy as the step starts. The whole model is gathered once per generation in
// the compute dtype (fsdp/whole_model.h) and freed after; each prompt is prefilled once and its
// cache copied to its group's rows, a finished row taking the next completion (model/generation.h). TRL's sampling settings (the section's
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
#include "fsdp/memory_estimate.h"
#include "model/generation.h"
#include "train/rollout_options.h"

namespace st {

// What one rank's sampling holds: the completions decoded at once and the tokens of each.
struct SamplingShape {
  int64_t rows = 1;               // completions decoded together
  int64_t group = 1;              // completions per prompt: one prompt prefilled for each group
  int64_t prompt_tokens = 0;      // data.cutoff_len
  int64_t completion_tokens = 0;  // max_completion_length
};

// The completions a rank decodes at once: all `wanted.rows` (its share of a generation) where
// they fit in `available_bytes` (device_available_bytes; < 0 on the CPU: no limit), else as many
// as fit, the others taking the rows that finish (model/generation.h). Counted by
// estimate_sampling_memory, with the prompts prefilled for them. Throws ConfigError naming the
// estimate and the settings that lower it where not even one completion fits.
int64_t sampling_rows(const ModelConfig& config, const SamplingShape& wanted, const EstimateInputs& in,
                      int64_t available_bytes, const RolloutOptions& options);

class SampledCompletions {
 public:
  // `rows`: the completions decoded at once (sampling_rows).
  SampledCompletions(const RolloutOptions& options, uint64_t seed, std::vector<int64_t> eos_ids, int64_t rows);

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

// The shape of an online objective's generations (rollout_phase.h): how many completions each
// rank holds, how they become micro-batches and how often a new generation starts, as TRL 1.16's
// GRPOTrainer lays them out on N processes.
#pragma once

#include <cstdint>

#include "train/rollout_options.h"

namespace st {

// The generation's shape on this rank and the world.
struct RolloutGeometry {
  int64_t micro_batch = 1;             // completions per micro-batch (train.micro_batch)
  int64_t steps_per_generation = 1;    // micro-batches of each rank one generation feeds
  int64_t iterations = 1;              // updates on each generation (num_iterations)
  int64_t group_size = 2;              // completions per prompt (num_generations)
  int64_t grad_accum = 1;
  int ranks = 1, rank = 0;             // data-parallel

  int64_t rank_block() const { return micro_batch * steps_per_generation; }
  int64_t completions() const { return rank_block() * ranks; }
  int64_t prompts() const { return completions() / group_size; }
  int64_t generate_every() const { return steps_per_generation * iterations; }
  // TRL computes the generating policy's log-probs unless a generation starts at every step.
  bool needs_old_logps() const { return grad_accum % generate_every() != 0; }
};
// From the objective's rollout settings, train.micro_batch and the run's resolved grad_accum;
// throws ConfigError naming the keys when a generation's completions are not whole groups.
RolloutGeometry rollout_geometry(const RolloutOptions& options, int64_t micro_batch, int64_t grad_accum, int data_ranks,
                                 int data_rank);

// Optimizer steps in one pass over `prompts` prompts (a short last generation is dropped, as
// TRL's sampler drops it).
int64_t rollout_steps_per_epoch(const RolloutGeometry& geometry, uint64_t prompts);

}  // namespace st

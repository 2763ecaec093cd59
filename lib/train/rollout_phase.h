// The rollout phase of an online objective (grpo, rloo): the prompts of each generation, their
// completions (sampled on the training ranks: sampled_completions.h; or replayed from the
// section's `rollouts`: replay_completions.h), the rewards and the objective's advantages over
// every rank's completions (Objective::generation_advantages), and the micro-batches a step trains
// on, each carrying its advantages and the per-token log-probs the loss reads beside the policy's.
// It reads the objective's RolloutOptions, never its section by name.
//
// The geometry is TRL 1.16's GRPOTrainer's on N processes: a generation is train.micro_batch x
// steps_per_generation completions per rank (N of them in all), the dataset's next prompts
// each repeated num_generations times in a row; rank r holds the r-th consecutive block and cuts
// it into steps_per_generation micro-batches; micro-batch k of a rank (k counted over the run)
// trains on slice k % steps_per_generation of generation k / (steps_per_generation x
// num_iterations). A step's generations are made at its start: the weights are those TRL's
// would have (they change only at the optimizer step), and the generating policy's log-probs
// are computed then where TRL computes them (grad_accum is not a multiple of steps_per_generation
// x num_iterations, or always for RLOO), with the reference's where the objective needs them.
// The completions keep their order (TRL shuffles them within a generation).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/pair_loader.h"
#include "data/sampler.h"
#include "fsdp/engine_stats.h"
#include "tokenizer/tokenizer.h"
#include "train/group_advantages.h"
#include "train/metrics_file.h"
#include "train/objective.h"
#include "train/replay_completions.h"
#include "train/rollout_geometry.h"
#include "train/reward_set.h"
#include "train/sampled_completions.h"
#include "train/run_setup.h"

namespace st {

class RolloutPhase {
 public:
  // `run` must outlive this. Throws ConfigError (rewards, the replay file's absence).
  RolloutPhase(const TrainConfig& config, const Objective& objective, RunSetup& run);
  ~RolloutPhase();

  // Collective. This rank's micro-batches of optimizer step `step` (0-based), generating where
  // the step needs a new generation; the time each phase took goes into `phases`.
  StepBatch step_batch(int64_t step, StepPhases& phases);
  // What TRL logs of the generations made since the last call (reward, reward_std,
  // rewards/<name>/mean, frac_reward_zero_std, completions/...), each averaged over them; empty
  // when none was made.
  nlohmann::ordered_json take_metrics();

 private:
  void generate(int64_t generation, int64_t step, StepPhases& phases);
  // log_completions: every rank's completions of the generation, one line each (rank 0 writes).
  void log_completions(int64_t generation, int64_t step, const GlobalBatch& prompts,
                       const std::vector<GenerationResult>& mine, const std::vector<double>& all_lengths,
                       const RewardTable& table, const GroupAdvantages& advantages);
  GlobalBatch prompts_of(int64_t generation);
  // This rank's completions of the generation, sampled or replayed (finish eos: not truncated;
  // no log-probs). `mine`: the prompts they come from (the generation's first / group_size onwards).
  std::vector<GenerationResult> completions_of(const GlobalBatch& prompts, const std::vector<Pair>& mine,
                                               int64_t generation);

  const TrainConfig& config_;
  const Objective& objective_;
  RunSetup& run_;
  const RolloutOptions& options_;  // the objective's section's
  RolloutGeometry geometry_;
  RewardSet rewards_;
  std::optional<Tokenizer> tokenizer_;  // decodes completions for the rewards that read text
  std::unique_ptr<ReplayCompletions> replay_;    // the section's rollouts given
  std::unique_ptr<SampledCompletions> sampled_;  // else
  GlobalSampler sampler_;
  int64_t sampled_generations_ = 0;  // prompts_of walks the sampler from here
  SamplerCursor sampler_cursor_;
  int64_t buffered_ = -1;            // the generation in buffer_
  std::vector<MicroBatch> buffer_;
  GlobalBatch buffered_prompts_;
  std::vector<nlohmann::ordered_json> metrics_;  // one per generation since take_metrics
  std::vector<int64_t> eos_ids_;
  std::unique_ptr<MetricsFile> completions_log_;  // rank 0, log_completions, opened when first written
};

}  // namespace st

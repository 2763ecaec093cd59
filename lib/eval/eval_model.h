// What evaluation asks of a model - log-probs of completions, greedy continuations - so tasks
// run the same on whole weights (`shardtune eval`) and on a training run's sharded ones.
#pragma once

#include <cstdint>
#include <vector>

#include "hf/model_config.h"
#include "model/generation.h"
#include "model/llama_blocks.h"
#include "model/shared_prompt_scorer.h"

namespace st {

class EvalModel {
 public:
  virtual ~EvalModel() = default;
  // Per request, log p of each completion given the prompt (`logp`; token_logps may be empty).
  // Collective for models whose forward is (sharded ones): every rank calls it, with any count.
  virtual std::vector<std::vector<ScoreResult>> score(const std::vector<SharedPromptRequest>& requests) = 0;
  // `first_index`: the global index of prompts[0] (the stop predicate's index). Collective as score.
  virtual std::vector<GenerationResult> generate(const std::vector<std::vector<int64_t>>& prompts,
                                                 const GenerationOptions& options, size_t first_index) = 0;
  virtual const ModelConfig& config() const = 0;
};

// Whole weights on this rank (a model directory, a preset, a checkpoint gathered).
class WholeWeightsModel : public EvalModel {
 public:
  WholeWeightsModel(LlamaWeights weights, ModelConfig config, ScorerOptions scorer)
      : weights_(std::move(weights)), config_(std::move(config)), scorer_(scorer) {}
  std::vector<std::vector<ScoreResult>> score(const std::vector<SharedPromptRequest>& requests) override;
  std::vector<GenerationResult> generate(const std::vector<std::vector<int64_t>>& prompts,
                                         const GenerationOptions& options, size_t first_index) override;
  const ModelConfig& config() const override { return config_; }

 private:
  LlamaWeights weights_;
  ModelConfig config_;
  ScorerOptions scorer_;
};

}  // namespace st

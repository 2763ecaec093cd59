// Evaluation tasks on a training run's sharded model: log-likelihoods through the FSDP forward
// (units gathered one at a time, as in training; a document's choices share their prompt), and
// greedy generation on the whole model gathered once per task in the compute dtype (an adapter
// run's adapters folded in; experts split by expert parallelism decoded through their exchange:
// fsdp/whole_model.h). Both are collective over the run.
#pragma once

#include <optional>

#include "distributed/communicator.h"
#include "eval/eval_model.h"
#include "fsdp/fsdp_model.h"

namespace st {

class ShardedEvalModel : public EvalModel {
 public:
  // `host`: the world on the CPU backend (agreeing batch counts). `max_batch_tokens`: padded
  // tokens per forward.
  ShardedEvalModel(FsdpModel& model, Communicator& host, int64_t max_batch_tokens)
      : model_(model), host_(host), max_batch_tokens_(max_batch_tokens) {}

  // Collective: every rank calls it (with any number of requests); ranks with fewer batches
  // run padding ones, as training does.
  std::vector<std::vector<ScoreResult>> score(const std::vector<SharedPromptRequest>& requests) override;
  // Collective: gathers the whole model (every rank), then decodes this rank's prompts (alone, or
  // in step with its expert group).
  std::vector<GenerationResult> generate(const std::vector<std::vector<int64_t>>& prompts,
                                         const GenerationOptions& options, size_t first_index) override;
  const ModelConfig& config() const override { return model_.config(); }

 private:
  FsdpModel& model_;
  Communicator& host_;
  int64_t max_batch_tokens_;
};

}  // namespace st

// Scores several completions of one prompt in one row: the prompt (but its last token) computed
// once as a shared segment, each completion a branch that sees it (the prompt-sharing layout of
// DPO training, row_layout.h, with any number of branches). Multiple-choice evaluation: a
// question's choices cost the prompt once instead of once per choice.
#pragma once

#include <cstdint>
#include <vector>

#include "model/sequence_scorer.h"

namespace st {

struct SharedPromptRequest {
  std::vector<int64_t> prompt_ids;                     // at least one token
  std::vector<std::vector<int64_t>> completions;
};

// Per request, one result per completion (as score_sequences would give each prompt +
// completion). Runs on the weights' device and dtype; rows batched up to max_batch_tokens.
std::vector<std::vector<ScoreResult>> score_shared_prompts(const LlamaWeights& weights, const ModelConfig& config,
                                                           const std::vector<SharedPromptRequest>& requests,
                                                           const ScorerOptions& options);

}  // namespace st

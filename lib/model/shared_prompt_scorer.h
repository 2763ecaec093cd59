// Scores several completions of one prompt in one row: the prompt (but its last token) computed
// once as a shared segment, each completion a branch that sees it (the prompt-sharing layout of
// DPO training, row_layout.h, with any number of branches). Multiple-choice evaluation: a
// question's choices cost the prompt once instead of once per choice.
#pragma once

#include <cstdint>
#include <vector>

#include "data/row_layout.h"
#include "model/sequence_scorer.h"

namespace st {

struct SharedPromptRequest {
  std::vector<int64_t> prompt_ids;                     // at least one token
  std::vector<std::vector<int64_t>> completions;
};

// Requests [first, last) as rows: one per request, right-padded, with the targets and layout
// make_token_batch takes; sequence s of the layout is completions[s] of `completions`' pair
// (request, completion); empty completions have none.
struct SharedPromptRows {
  at::Tensor input_ids, targets;  // [R, T] int64 on the host
  RowLayout layout;
  std::vector<std::pair<size_t, size_t>> completions;
};
SharedPromptRows shared_prompt_rows(const std::vector<SharedPromptRequest>& requests, size_t first, size_t last);

// Consecutive [first, last) ranges of `requests` whose padded rows hold at most
// max_batch_tokens (a single request may exceed it alone).
std::vector<std::pair<size_t, size_t>> shared_prompt_batches(const std::vector<SharedPromptRequest>& requests,
                                                             int64_t max_batch_tokens);

// Per request, one result per completion (as score_sequences would give each prompt +
// completion). Runs on the weights' device and dtype; rows batched up to max_batch_tokens.
std::vector<std::vector<ScoreResult>> score_shared_prompts(const LlamaWeights& weights, const ModelConfig& config,
                                                           const std::vector<SharedPromptRequest>& requests,
                                                           const ScorerOptions& options);

}  // namespace st

// Scores completions under a model: per completion token log p(token | everything before),
// and their sum, or under a reward model the reward of prompt + completion. The building block
// of `shardtune score` and of DPO reference log-probs.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "hf/model_config.h"
#include "model/llama_blocks.h"

namespace st {

struct ScoreRequest {
  std::vector<int64_t> prompt_ids;      // at least one token (the first completion token's context)
  std::vector<int64_t> completion_ids;
};

// One sparse layer's routing of a sequence's tokens (prompt + completion): each token's top-k
// experts and their weights, [tokens x k] row-major.
struct SequenceRouting {
  int64_t layer = 0;
  int64_t k = 0;
  std::vector<int64_t> experts;
  std::vector<float> weights;
};

// A causal LM's log-probs, or a reward model's reward (ModelHead::score) of prompt + completion.
struct ScoreResult {
  double logp = 0.0;                    // sum of token_logps
  std::vector<float> token_logps;       // one per completion token
  double reward = 0.0;                  // a reward model's, read at the last non-pad token
  std::vector<SequenceRouting> routing;  // with ScorerOptions::routing: per sparse layer
};

struct ScorerOptions {
  int64_t chunk_tokens = 1024;          // lm_head log-prob chunk (tokens)
  int64_t max_batch_tokens = 8192;      // padded tokens per forward pass
  bool routing = false;                 // a mixture-of-experts model's routing of every token
};

// Consecutive [first, last) ranges of `count` rows, row i `length(i)` tokens long, whose
// right-padded batch (rows x the longest) holds at most max_batch_tokens; a row longer than
// that is a batch alone. The scorers' batching.
std::vector<std::pair<size_t, size_t>> padded_batches(size_t count, const std::function<int64_t(size_t)>& length,
                                                      int64_t max_batch_tokens);

// Runs on the weights' device and dtype; results come back in request order.
std::vector<ScoreResult> score_sequences(const LlamaWeights& weights, const ModelConfig& config,
                                         const std::vector<ScoreRequest>& requests,
                                         const ScorerOptions& options);

}  // namespace st

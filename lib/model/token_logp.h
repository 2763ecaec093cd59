// Log-probabilities of target tokens under the lm_head, computed in chunks of tokens: per
// chunk the logits [chunk, V] are formed, reduced (logsumexp, gather) and dropped, in forward
// and again in backward, so the full [tokens, V] fp32 logits never exist at once.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "data/padded_rows.h"  // kIgnoreTarget

namespace st {

// Where the weight's gradient goes instead of autograd: `destination` [V, D] in the reduction
// dtype (fp32; fp64 for fp64 inputs), summed in that dtype inside the matmul; `overwrite`
// writes instead of adding (the first contribution of a step).
struct WeightGradSink {
  at::Tensor destination;
  bool overwrite = false;
};

// How the log-probs are taken, and what else the same pass over the logits computes.
struct TokenLogpOptions {
  int64_t chunk_tokens = 1024;
  // The logits are divided by it before the softmax, as TRL's GRPOTrainer scores completions
  // sampled at that temperature (1: unchanged).
  double temperature = 1.0;
  // Also each position's entropy of that softmax, as TRL's entropy_from_logits (no gradient).
  bool entropies = false;
  WeightGradSink sink;
};

struct TokenLogps {
  at::Tensor logps;      // [N] fp32 (fp64 for fp64 inputs), differentiable
  at::Tensor entropies;  // [N], same dtype, detached; undefined unless asked for
};

// hidden [N, D], weight [V, D] (same dtype), targets [N] int64 -> log p(target) [N] fp32
// (fp64 for fp64 inputs), 0 where a target is ignored.
// Differentiable in hidden and weight (in weight through `sink` when one is given); logits are
// computed in the weights' dtype and reduced in fp32, as transformers does.
TokenLogps chunked_token_logps(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets,
                               const TokenLogpOptions& options);
// The log-probs alone, at temperature 1.
at::Tensor chunked_token_logps(const at::Tensor& hidden, const at::Tensor& weight,
                               const at::Tensor& targets, int64_t chunk_tokens,
                               const WeightGradSink& sink = {});

// The naive path (full logits, log_softmax, gather): the baseline for tests and bench/.
at::Tensor full_logits_token_logps(const at::Tensor& hidden, const at::Tensor& weight,
                                   const at::Tensor& targets, double temperature = 1.0);

}  // namespace st

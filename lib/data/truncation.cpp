#include "data/truncation.h"

#include <algorithm>

namespace st {

namespace {

// LlamaFactory's infer_seqlen: the response tokens that stay of `target` when a prompt of
// `source` tokens and it must fit `cutoff` - all of a short response, else all but a short
// prompt, else shares in proportion to their lengths.
int64_t kept_response(int64_t source, int64_t target, int64_t cutoff) {
  int64_t most = 0;
  if (target * 2 < cutoff) {
    most = cutoff;
  } else if (source * 2 < cutoff) {
    most = cutoff - source;
  } else {
    most = static_cast<int64_t>(static_cast<double>(cutoff) *
                                (static_cast<double>(target) / static_cast<double>(source + target)));
  }
  return std::min(most, target);
}

}  // namespace

FitResult fit_to_cutoff(Pair& pair, int64_t cutoff_len, TruncationPolicy policy) {
  const auto longest = static_cast<int64_t>(std::max(pair.chosen.size(), pair.rejected.size()));
  const auto prompt = static_cast<int64_t>(pair.prompt.size());
  if (prompt + longest <= cutoff_len) return FitResult::kept;
  if (policy == TruncationPolicy::drop) return FitResult::dropped;
  // At least one prompt token: the first response token is predicted from it.
  const int64_t prompt_keep =
      std::clamp<int64_t>(cutoff_len - kept_response(prompt, longest, cutoff_len), std::min<int64_t>(prompt, 1), prompt);
  pair.prompt.erase(pair.prompt.begin(), pair.prompt.end() - prompt_keep);  // keep the end
  const auto response_keep = static_cast<size_t>(cutoff_len - prompt_keep);
  if (pair.chosen.size() > response_keep) pair.chosen.resize(response_keep);
  if (pair.loss_mask.size() > response_keep) pair.loss_mask.resize(response_keep);
  if (pair.rejected.size() > response_keep) pair.rejected.resize(response_keep);
  return FitResult::truncated;
}

}  // namespace st

#include "data/truncation.h"

#include <algorithm>

namespace st {

FitResult fit_to_cutoff(Pair& pair, int64_t cutoff_len, TruncationPolicy policy) {
  const auto longest = static_cast<int64_t>(std::max(pair.chosen.size(), pair.rejected.size()));
  const auto prompt = static_cast<int64_t>(pair.prompt.size());
  if (prompt + longest <= cutoff_len) return FitResult::kept;
  if (policy == TruncationPolicy::drop) return FitResult::dropped;
  const int64_t prompt_keep = std::min(prompt, std::max<int64_t>(1, cutoff_len - longest));
  pair.prompt.erase(pair.prompt.begin(), pair.prompt.end() - prompt_keep);  // keep the end
  const auto response_keep = static_cast<size_t>(cutoff_len - prompt_keep);
  if (pair.chosen.size() > response_keep) pair.chosen.resize(response_keep);
  if (pair.loss_mask.size() > response_keep) pair.loss_mask.resize(response_keep);
  if (pair.rejected.size() > response_keep) pair.rejected.resize(response_keep);
  return FitResult::truncated;
}

}  // namespace st

#include "train/sharded_eval_model.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>

#include "distributed/value_gather.h"
#include "fsdp/whole_model.h"
#include "util/errors.h"

namespace st {

std::vector<std::vector<ScoreResult>> ShardedEvalModel::score(const std::vector<SharedPromptRequest>& requests) {
  c10::NoGradGuard no_grad;
  std::vector<std::vector<ScoreResult>> results(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) results[i].resize(requests[i].completions.size());
  const std::vector<std::pair<size_t, size_t>> batches = shared_prompt_batches(requests, max_batch_tokens_);
  double most = 0;
  for (double count : all_gather_values(host_, {static_cast<double>(batches.size())})) most = std::max(most, count);
  const std::vector<SharedPromptRequest> padding = {{{0}, {{0}}}};
  for (size_t b = 0; b < static_cast<size_t>(most); ++b) {
    const bool mine = b < batches.size();
    const SharedPromptRows rows = mine ? shared_prompt_rows(requests, batches[b].first, batches[b].second)
                                       : shared_prompt_rows(padding, 0, 1);
    const at::Tensor sums = model_.sequence_logps(rows.input_ids, rows.targets, rows.layout).to(at::kCPU, at::kDouble);
    if (!mine) continue;
    const double* values = sums.data_ptr<double>();
    for (size_t s = 0; s < rows.completions.size(); ++s) {
      results[rows.completions[s].first][rows.completions[s].second].logp = values[s];
    }
  }
  return results;
}

std::vector<GenerationResult> ShardedEvalModel::generate(const std::vector<std::vector<int64_t>>& prompts,
                                                         const GenerationOptions& options, size_t first_index) {
  return st::generate(gather_whole_model(model_, host_), model_.config(), prompts, options, first_index);
}

}  // namespace st

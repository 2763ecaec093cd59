#include "eval/eval_model.h"

namespace st {

// One completion per prompt (perplexity windows) takes the plain rows; several share the prompt.
std::vector<std::vector<ScoreResult>> WholeWeightsModel::score(const std::vector<SharedPromptRequest>& requests) {
  std::vector<std::vector<ScoreResult>> results(requests.size());
  std::vector<ScoreRequest> single;
  std::vector<size_t> single_index;
  std::vector<SharedPromptRequest> shared;
  std::vector<size_t> shared_index;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].completions.size() == 1) {
      single.push_back({requests[i].prompt_ids, requests[i].completions.front()});
      single_index.push_back(i);
    } else {
      shared.push_back(requests[i]);
      shared_index.push_back(i);
    }
  }
  const std::vector<ScoreResult> plain = score_sequences(weights_, config_, single, scorer_);
  for (size_t k = 0; k < plain.size(); ++k) results[single_index[k]] = {plain[k]};
  std::vector<std::vector<ScoreResult>> branched = score_shared_prompts(weights_, config_, shared, scorer_);
  for (size_t k = 0; k < branched.size(); ++k) results[shared_index[k]] = std::move(branched[k]);
  return results;
}

std::vector<GenerationResult> WholeWeightsModel::generate(const std::vector<std::vector<int64_t>>& prompts,
                                                          const GenerationOptions& options, size_t first_index) {
  return st::generate(weights_, config_, prompts, options, first_index);
}

}  // namespace st

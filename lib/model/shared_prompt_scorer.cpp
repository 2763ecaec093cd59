#include "model/shared_prompt_scorer.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>

#include "data/padded_rows.h"
#include "data/row_layout.h"
#include "model/llama_units.h"
#include "model/rope.h"
#include "util/errors.h"

namespace st {
namespace {

// Tokens of a request's row: prompt[:-1] shared, then per completion its prompt's last token
// and all its tokens but the last (each position predicts the next completion token).
int64_t row_length(const SharedPromptRequest& request) {
  auto length = static_cast<int64_t>(request.prompt_ids.size()) - 1;
  for (const auto& completion : request.completions) length += static_cast<int64_t>(completion.size());
  return length;
}

void score_rows(const LlamaWeights& weights, const ModelConfig& config, const at::Tensor& inverse_frequencies,
                const std::vector<SharedPromptRequest>& requests, size_t first, size_t last, const ScorerOptions& options,
                std::vector<std::vector<ScoreResult>>& results) {
  int64_t width = 1;
  for (size_t i = first; i < last; ++i) width = std::max(width, row_length(requests[i]));
  const auto rows = static_cast<int64_t>(last - first);
  const auto long_options = at::TensorOptions(at::kLong);
  at::Tensor input_ids = at::zeros({rows, width}, long_options);
  at::Tensor targets = at::full({rows, width}, kIgnoreTarget, long_options);
  RowLayout layout;
  layout.position_ids = at::zeros({rows, width}, long_options);
  layout.segment_ids = at::full({rows, width}, kPaddingSegment, long_options);
  layout.branch_ids = at::full({rows, width}, kSharedBranch, long_options);
  layout.sequence_ids = at::full({rows, width}, -1, long_options);
  auto ids = input_ids.accessor<int64_t, 2>();
  auto target = targets.accessor<int64_t, 2>();
  auto positions = layout.position_ids.accessor<int64_t, 2>();
  auto segments = layout.segment_ids.accessor<int64_t, 2>();
  auto branches = layout.branch_ids.accessor<int64_t, 2>();
  auto sequences = layout.sequence_ids.accessor<int64_t, 2>();
  int64_t sequence = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const SharedPromptRequest& request = requests[first + static_cast<size_t>(r)];
    const auto shared = static_cast<int64_t>(request.prompt_ids.size()) - 1;
    int64_t t = 0;
    for (; t < shared; ++t) {
      ids[r][t] = request.prompt_ids[static_cast<size_t>(t)];
      positions[r][t] = t;
      segments[r][t] = r;
    }
    int64_t branch = 0;
    for (const auto& completion : request.completions) {
      if (completion.empty()) continue;
      ++branch;
      for (size_t j = 0; j < completion.size(); ++j, ++t) {
        ids[r][t] = j == 0 ? request.prompt_ids.back() : completion[j - 1];
        target[r][t] = completion[j];
        positions[r][t] = shared + static_cast<int64_t>(j);
        segments[r][t] = r;
        branches[r][t] = branch;
        sequences[r][t] = sequence;
      }
      ++sequence;
    }
  }
  layout.sequences = std::max<int64_t>(sequence, 1);
  const TokenBatch batch = make_token_batch(input_ids, targets, inverse_frequencies, weights.embed.scalar_type(),
                                            options.chunk_tokens, layout, config.sliding_window);
  const at::Tensor logps = llama_target_logps(weights, config, batch).cpu();
  const float* values = logps.data_ptr<float>();
  for (size_t i = first; i < last; ++i) {  // (row, position) order: a row's branches one after another
    for (const auto& completion : requests[i].completions) {
      ScoreResult result;
      result.token_logps.assign(values, values + completion.size());
      values += completion.size();
      for (float value : result.token_logps) result.logp += value;
      results[i].push_back(std::move(result));
    }
  }
}

}  // namespace

std::vector<std::vector<ScoreResult>> score_shared_prompts(const LlamaWeights& weights, const ModelConfig& config,
                                                           const std::vector<SharedPromptRequest>& requests,
                                                           const ScorerOptions& options) {
  c10::NoGradGuard no_grad;
  for (const SharedPromptRequest& request : requests) {
    if (request.prompt_ids.empty()) throw ModelError("score_shared_prompts: a prompt needs at least one token");
  }
  std::vector<std::vector<ScoreResult>> results(requests.size());
  const at::Tensor inverse_frequencies = rope_inverse_frequencies(config).to(weights.embed.device());
  size_t first = 0;
  while (first < requests.size()) {
    size_t last = first + 1;
    int64_t widest = row_length(requests[first]);
    while (last < requests.size()) {
      const int64_t next_widest = std::max(widest, row_length(requests[last]));
      if (next_widest * static_cast<int64_t>(last - first + 1) > options.max_batch_tokens) break;
      widest = next_widest;
      ++last;
    }
    score_rows(weights, config, inverse_frequencies, requests, first, last, options, results);
    first = last;
  }
  return results;
}

}  // namespace st

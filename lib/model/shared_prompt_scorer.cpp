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

}  // namespace

SharedPromptRows shared_prompt_rows(const std::vector<SharedPromptRequest>& requests, size_t first, size_t last) {
  int64_t width = 1;
  for (size_t i = first; i < last; ++i) width = std::max(width, row_length(requests[i]));
  const auto rows = static_cast<int64_t>(last - first);
  const auto long_options = at::TensorOptions(at::kLong);
  SharedPromptRows out;
  out.input_ids = at::zeros({rows, width}, long_options);
  out.targets = at::full({rows, width}, kIgnoreTarget, long_options);
  out.layout = padding_row_layout(rows, width);
  RowLayout& layout = out.layout;
  auto ids = out.input_ids.accessor<int64_t, 2>();
  auto target = out.targets.accessor<int64_t, 2>();
  auto positions = layout.position_ids.accessor<int64_t, 2>();
  auto segments = layout.segment_ids.accessor<int64_t, 2>();
  auto branches = layout.branch_ids.accessor<int64_t, 2>();
  auto sequences = layout.sequence_ids.accessor<int64_t, 2>();
  for (int64_t r = 0; r < rows; ++r) {
    const size_t index = first + static_cast<size_t>(r);
    const SharedPromptRequest& request = requests[index];
    const auto shared = static_cast<int64_t>(request.prompt_ids.size()) - 1;
    int64_t t = 0;
    for (; t < shared; ++t) {
      ids[r][t] = request.prompt_ids[static_cast<size_t>(t)];
      positions[r][t] = t;
      segments[r][t] = r;
    }
    int64_t branch = 0;
    for (size_t c = 0; c < request.completions.size(); ++c) {
      const std::vector<int64_t>& completion = request.completions[c];
      if (completion.empty()) continue;
      ++branch;
      const auto sequence = static_cast<int64_t>(out.completions.size());
      for (size_t j = 0; j < completion.size(); ++j, ++t) {
        ids[r][t] = j == 0 ? request.prompt_ids.back() : completion[j - 1];
        target[r][t] = completion[j];
        positions[r][t] = shared + static_cast<int64_t>(j);
        segments[r][t] = r;
        branches[r][t] = branch;
        sequences[r][t] = sequence;
      }
      out.completions.emplace_back(index, c);
    }
  }
  layout.sequences = std::max<int64_t>(static_cast<int64_t>(out.completions.size()), 1);
  return out;
}

std::vector<std::pair<size_t, size_t>> shared_prompt_batches(const std::vector<SharedPromptRequest>& requests,
                                                             int64_t max_batch_tokens) {
  return padded_batches(requests.size(), [&](size_t i) { return row_length(requests[i]); }, max_batch_tokens);
}

std::vector<std::vector<ScoreResult>> score_shared_prompts(const LlamaWeights& weights, const ModelConfig& config,
                                                           const std::vector<SharedPromptRequest>& requests,
                                                           const ScorerOptions& options) {
  c10::NoGradGuard no_grad;
  for (const SharedPromptRequest& request : requests) {
    if (request.prompt_ids.empty()) throw ModelError("score_shared_prompts: a prompt needs at least one token");
  }
  std::vector<std::vector<ScoreResult>> results(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) results[i].resize(requests[i].completions.size());
  const ModelAttention kinds = model_attention(config, weights.embed.device());
  for (const auto& [first, last] : shared_prompt_batches(requests, options.max_batch_tokens)) {
    const SharedPromptRows rows = shared_prompt_rows(requests, first, last);
    const TokenBatch batch = make_token_batch(rows.input_ids, rows.targets, kinds, weights.embed.scalar_type(),
                                              options.chunk_tokens, rows.layout);
    const at::Tensor logps = llama_target_logps(weights, config, batch).cpu();
    const float* values = logps.data_ptr<float>();
    for (const auto& [request, completion] : rows.completions) {  // (row, position) order
      ScoreResult& result = results[request][completion];
      const size_t count = requests[request].completions[completion].size();
      result.token_logps.assign(values, values + count);
      values += count;
      for (float value : result.token_logps) result.logp += value;
    }
  }
  return results;
}

}  // namespace st

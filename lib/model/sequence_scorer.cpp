#include "model/sequence_scorer.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>

#include "data/padded_rows.h"
#include "model/llama_units.h"
#include "model/moe_block.h"
#include "model/reward_positions.h"
#include "model/rope.h"

namespace st {
namespace {

int64_t length_of(const ScoreRequest& request) {
  return static_cast<int64_t>(request.prompt_ids.size() + request.completion_ids.size());
}

// Requests [first, last) as one right-padded batch, on the weights' device; `kinds`: what the
// layers attend with there, made once per call. A reward model's rows are padded with its pad token
// and carry the positions its rewards are read at.
TokenBatch request_batch(const LlamaWeights& weights, const ModelConfig& config, const ModelAttention& kinds,
                         const std::vector<ScoreRequest>& requests, size_t first, size_t last,
                         const ScorerOptions& options) {
  std::vector<PromptResponse<int64_t>> rows;
  for (size_t i = first; i < last; ++i) rows.push_back({&requests[i].prompt_ids, &requests[i].completion_ids});
  const PaddedRows padded = pad_prompt_response_rows(rows, std::max<int64_t>(config.pad_token_id, 0));
  TokenBatch batch = make_token_batch(padded.input_ids, padded.targets, kinds, weights.embed.scalar_type(),
                                      options.chunk_tokens);
  if (config.head == ModelHead::score) {
    batch.reward_positions = reward_positions(padded.input_ids, padded.targets, {}, config.pad_token_id)
                                 .to(weights.embed.device());
  }
  return batch;
}

// Each request's rows of the batch's routing (rows right-padded to the batch's width).
void take_routing(const ModelConfig& config, const std::vector<Routing>& routing, const TokenBatch& batch,
                  const std::vector<ScoreRequest>& requests, size_t first, size_t last,
                  std::vector<ScoreResult>& results) {
  const int64_t width = batch.input_ids.size(1);
  size_t slot = 0;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    if (!config.sparse_layer(layer)) continue;
    const at::Tensor experts = routing.at(slot).experts.cpu().contiguous();
    const at::Tensor weights = routing.at(slot++).weights.to(at::kCPU, at::kFloat).contiguous();
    const int64_t k = experts.size(1);
    for (size_t i = first; i < last; ++i) {
      const int64_t begin = static_cast<int64_t>(i - first) * width * k, tokens = length_of(requests[i]);
      SequenceRouting routed;
      routed.layer = layer;
      routed.k = k;
      routed.experts.assign(experts.data_ptr<int64_t>() + begin, experts.data_ptr<int64_t>() + begin + tokens * k);
      routed.weights.assign(weights.data_ptr<float>() + begin, weights.data_ptr<float>() + begin + tokens * k);
      results[i].routing.push_back(std::move(routed));
    }
  }
}

void score_batch(const LlamaWeights& weights, const ModelConfig& config, const TokenBatch& batch,
                 const std::vector<ScoreRequest>& requests, size_t first, size_t last,
                 std::vector<ScoreResult>& results, bool with_routing) {
  if (config.head == ModelHead::score) {
    const at::Tensor rewards = llama_sequence_rewards(weights, config, batch).to(at::kCPU, at::kDouble);
    for (size_t i = first; i < last; ++i) results[i].reward = rewards[static_cast<int64_t>(i - first)].item<double>();
    return;
  }
  std::vector<Routing> routing;
  const at::Tensor logps = llama_target_logps(weights, config, batch, with_routing ? &routing : nullptr).cpu();
  if (with_routing) take_routing(config, routing, batch, requests, first, last, results);
  const float* values = logps.data_ptr<float>();
  for (size_t i = first; i < last; ++i) {  // rows come back in (sequence, position) order
    ScoreResult& result = results[i];
    result.token_logps.assign(values, values + requests[i].completion_ids.size());
    values += requests[i].completion_ids.size();
    for (float value : result.token_logps) result.logp += value;
  }
}

}  // namespace

std::vector<std::pair<size_t, size_t>> padded_batches(size_t count, const std::function<int64_t(size_t)>& length,
                                                      int64_t max_batch_tokens) {
  std::vector<std::pair<size_t, size_t>> batches;
  size_t first = 0;
  while (first < count) {
    size_t last = first + 1;
    int64_t longest = length(first);
    while (last < count) {
      const int64_t next_longest = std::max(longest, length(last));
      if (next_longest * static_cast<int64_t>(last - first + 1) > max_batch_tokens) break;
      longest = next_longest;
      ++last;
    }
    batches.emplace_back(first, last);
    first = last;
  }
  return batches;
}

std::vector<ScoreResult> score_sequences(const LlamaWeights& weights, const ModelConfig& config,
                                         const std::vector<ScoreRequest>& requests,
                                         const ScorerOptions& options) {
  c10::NoGradGuard no_grad;
  std::vector<ScoreResult> results(requests.size());
  const ModelAttention kinds = model_attention(config, weights.embed.device());
  const auto length = [&](size_t i) { return length_of(requests[i]); };
  for (const auto& [first, last] : padded_batches(requests.size(), length, options.max_batch_tokens)) {
    const TokenBatch batch = request_batch(weights, config, kinds, requests, first, last, options);
    score_batch(weights, config, batch, requests, first, last, results, options.routing);
  }
  return results;
}

}  // namespace st

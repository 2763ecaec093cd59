// The prompt-shared scorer against the plain one (itself checked against the float64
// reference in test_llama_reference.cpp): every completion of a prompt scores as it does alone,
// with one-token prompts, empty completions, many branches, batches of unequal rows and a
// sliding window shorter than the rows.
#include <gtest/gtest.h>

#include "hf/model_weights.h"
#include "hf/presets.h"
#include "model/shared_prompt_scorer.h"
#include "relative_diff.h"

namespace st {
namespace {

void expect_same_as_alone(int64_t sliding_window, int64_t batch_tokens) {
  ModelConfig config = preset_config("debug");
  config.sliding_window = sliding_window;
  const TensorMap tensors = init_preset_weights(config, 5, at::kFloat);
  const LlamaWeights weights = llama_weights(tensors, config);
  const std::vector<SharedPromptRequest> requests = {
      {{1, 5, 9, 20, 33, 7}, {{4, 4}, {17}, {100, 101, 102, 103}, {}, {8, 9, 10}}},
      {{42}, {{3, 2, 1}, {7}}},
      {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {{13, 14, 15, 16, 17, 18}, {200}}},
  };
  ScorerOptions options;
  options.chunk_tokens = 7;
  options.max_batch_tokens = batch_tokens;
  const auto shared = score_shared_prompts(weights, config, requests, options);
  ASSERT_EQ(shared.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_EQ(shared[i].size(), requests[i].completions.size());
    std::vector<ScoreRequest> alone;
    for (const auto& completion : requests[i].completions) alone.push_back({requests[i].prompt_ids, completion});
    const auto expected = score_sequences(weights, config, alone, options);
    for (size_t c = 0; c < alone.size(); ++c) {
      ASSERT_EQ(shared[i][c].token_logps.size(), alone[c].completion_ids.size());
      for (size_t t = 0; t < alone[c].completion_ids.size(); ++t) {
        ST_EXPECT_NEAR(shared[i][c].token_logps[t], expected[c].token_logps[t], 2e-5) << "request " << i << " completion " << c;
      }
      ST_EXPECT_NEAR(shared[i][c].logp, expected[c].logp, 1e-4);
    }
  }
}

TEST(SharedPromptScorer, EachCompletionScoresAsAlone) { expect_same_as_alone(0, 8192); }
TEST(SharedPromptScorer, OneRowPerBatch) { expect_same_as_alone(0, 1); }
TEST(SharedPromptScorer, UnderASlidingWindow) { expect_same_as_alone(5, 8192); }

}  // namespace
}  // namespace st

// A reward model's head (ModelHead::score): where each sequence's reward is read (the last
// token that is not the pad token, transformers' rule) in plain, packed and prompt-shared rows,
// and the reward itself: the score of the final-normed hidden state there, as the sequence
// alone gives it.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "data/collate.h"
#include "hf/model_weights.h"
#include "hf/presets.h"
#include "model/llama_units.h"
#include "model/reward_positions.h"
#include "model/rms_norm.h"
#include "util/errors.h"
#include "relative_diff.h"

namespace st {
namespace {

ModelConfig reward_config() {
  ModelConfig config = preset_config("debug");
  config.head = ModelHead::score;
  config.pad_token_id = 0;
  return config;
}

// Pairs whose completions differ in length; the last pair's chosen ends in the pad token (pad =
// eos, TRL's default), so its reward is read one token earlier.
std::vector<Pair> pairs() {
  std::vector<Pair> out(3);
  out[0] = {{1, 5, 9}, {6, 7}, {8, 9, 10, 11}, std::nullopt, std::nullopt};
  out[1] = {{1}, {6, 7, 12}, {9}, std::nullopt, std::nullopt};
  out[2] = {{1, 4}, {13, 14, 0}, {15, 16}, std::nullopt, std::nullopt};
  return out;
}

// The token each sequence's reward should be read at: chosen rows, then rejected rows.
std::vector<int64_t> expected_tokens() { return {7, 12, 14, 11, 9, 16}; }

std::vector<int64_t> tokens_at(const MicroBatch& batch, const at::Tensor& positions) {
  const at::Tensor flat = batch.input_ids.reshape({-1});
  std::vector<int64_t> tokens;
  for (int64_t s = 0; s < positions.numel(); ++s) tokens.push_back(flat[positions[s].item<int64_t>()].item<int64_t>());
  return tokens;
}

TEST(RewardPositions, ReadEachSequencesLastNonPadTokenInEveryLayout) {
  for (const bool packing : {false, true}) {
    for (const bool share_prompt : {false, true}) {
      CollateOptions options;
      options.packing = packing;
      options.share_prompt = share_prompt;
      const MicroBatch batch = collate_pairs(pairs(), PairKind::dpo, options);
      const at::Tensor positions = reward_positions(batch.input_ids, batch.targets, batch.layout, 0);
      EXPECT_EQ(tokens_at(batch, positions), expected_tokens()) << "packing " << packing << ", shared " << share_prompt;
    }
  }
}

TEST(RewardPositions, PlainRowsWithoutTargetsReadTheirLastNonPadToken) {
  const at::Tensor ids = at::tensor({3, 4, 0, 0, 0, 0, 0, 0}, at::kLong).view({2, 4});
  const at::Tensor targets = at::full({2, 4}, kIgnoreTarget, at::kLong);
  const at::Tensor positions = reward_positions(ids, targets, {}, 0);
  EXPECT_EQ(positions[0].item<int64_t>(), 1);  // token 4
  EXPECT_EQ(positions[1].item<int64_t>(), 4);  // a padding row: its first position
  // Without a pad token, the row's end.
  EXPECT_EQ(reward_positions(ids, targets, {}, -1)[0].item<int64_t>(), 3);
}

TEST(RewardPositions, ALaidOutSequenceWithoutATargetIsRefused) {
  CollateOptions options;
  options.packing = true;
  MicroBatch batch = collate_pairs(pairs(), PairKind::dpo, options);
  batch.targets.fill_(kIgnoreTarget);
  EXPECT_THROW(reward_positions(batch.input_ids, batch.targets, batch.layout, 0), ModelError);
}

TEST(RewardHead, RewardIsTheScoreOfTheFinalHiddenStateOfTheSequenceAlone) {
  const ModelConfig config = reward_config();
  const TensorMap tensors = init_preset_weights(config, 7, at::kFloat);
  const LlamaWeights weights = llama_weights(tensors, config);
  ASSERT_TRUE(weights.score.defined());
  ASSERT_EQ(weights.score.sizes(), (std::vector<int64_t>{1, config.hidden_size}));
  EXPECT_EQ(tensors.count("lm_head.weight"), 0u);
  for (const bool packing : {false, true}) {
    CollateOptions options;
    options.packing = packing;
    const MicroBatch batch = collate_pairs(pairs(), PairKind::dpo, options);
    TokenBatch tokens = make_token_batch(batch.input_ids, batch.targets, rope_inverse_frequencies(config), at::kFloat,
                                         16, batch.layout);
    tokens.reward_positions = reward_positions(batch.input_ids, batch.targets, batch.layout, 0);
    const at::Tensor rewards = llama_sequence_rewards(weights, config, tokens);
    ASSERT_EQ(rewards.numel(), 6);
    const std::vector<Pair> all = pairs();
    for (int64_t s = 0; s < 6; ++s) {
      const Pair& pair = all[static_cast<size_t>(s % 3)];
      std::vector<int64_t> ids(pair.prompt.begin(), pair.prompt.end());
      const auto& completion = s < 3 ? pair.chosen : pair.rejected;
      ids.insert(ids.end(), completion.begin(), completion.end());
      if (ids.back() == 0) ids.pop_back();  // read before a closing pad token
      const at::Tensor hidden = llama_final_hidden(weights, config, at::tensor(ids, at::kLong).view({1, -1}));
      const double expected = at::dot(hidden[0][-1], weights.score[0]).item<double>();
      ST_EXPECT_NEAR(rewards[s].item<double>(), expected, 1e-5 * std::max(1.0, std::abs(expected)))
          << "sequence " << s << (packing ? ", packed" : "");
    }
  }
}

}  // namespace
}  // namespace st

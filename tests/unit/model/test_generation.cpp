// Generation: KV-cache decoding against the plain forward (no cache) over the whole sequence,
// whose argmax must be the token chosen at every step (also under a sliding window shorter than
// the sequences); batches, per-prompt seeds, EOS and stop predicates, groups of completions per
// prompt from one prefill, finished rows refilled. Greedy output against the
// independent float64 reference is in test_llama_reference.cpp.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include "hf/model_weights.h"
#include "hf/presets.h"
#include "model/generation.h"
#include "model/llama_units.h"

namespace st {
namespace {

struct Model {
  ModelConfig config = preset_config("debug");
  TensorMap tensors;
  explicit Model(int64_t sliding_window = 0) {
    config.sliding_window = sliding_window;
    tensors = init_preset_weights(config, 11, at::kFloat);
  }
  LlamaWeights weights() const { return llama_weights(tensors, config); }
};

// A log-prob computed in a batch of another size: the same fp32 sums in another order. Both
// OpenBLAS cores (Cooperlake, Haswell) show at most 4.8e-7 here (1 ulp at |logp| ~ 6); 1e-5 is
// 20x that, and far below what a wrong row (another prefix or position) moves it by.
constexpr double kLogpRounding = 1e-5;

const std::vector<std::vector<int64_t>> kPrompts = {{1, 5, 9, 20}, {1, 7}, {3, 4, 5, 6, 7, 8, 9, 10, 11}, {42}};

// The last position's logits of `ids` by the plain forward: every token recomputed, no cache.
at::Tensor full_forward_logits(const Model& model, const std::vector<int64_t>& ids) {
  c10::NoGradGuard no_grad;
  const LlamaWeights w = model.weights();
  const at::Tensor input = at::tensor(ids, at::kLong).unsqueeze(0);
  const TokenBatch batch = make_token_batch(input, at::full_like(input, -100), rope_inverse_frequencies(model.config),
                                            at::kFloat, 16, {}, model.config.sliding_window);
  at::Tensor hidden = at::embedding(w.embed, input);
  for (const LayerWeights& layer : w.layers) hidden = decoder_layer(layer, hidden, batch.positions, model.config);
  const at::Tensor last = hidden.select(1, hidden.size(1) - 1);
  return at::linear(rms_norm(last, w.final_norm, model.config.rms_norm_eps), w.lm_head).squeeze(0);
}

void expect_cache_matches_plain_forward(const Model& model) {
  GenerationOptions options;
  options.max_new_tokens = 12;
  options.batch_size = 3;  // two batches, prompts of unequal lengths left-padded
  const auto results = generate(model.weights(), model.config, kPrompts, options);
  ASSERT_EQ(results.size(), kPrompts.size());
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    ASSERT_EQ(results[i].ids.size(), 12u);
    EXPECT_EQ(results[i].finish, FinishReason::length);
    std::vector<int64_t> sequence = kPrompts[i];
    for (const int64_t token : results[i].ids) {
      EXPECT_EQ(full_forward_logits(model, sequence).argmax().item<int64_t>(), token)
          << "prompt " << i << " after " << sequence.size() << " tokens";
      sequence.push_back(token);
    }
  }
}

TEST(Generation, KvCacheDecodeEqualsThePlainForwardsArgmax) { expect_cache_matches_plain_forward(Model()); }

// A window of 5 is shorter than every sequence here but one: the cache must drop old keys.
TEST(Generation, KvCacheDecodeKeepsTheSlidingWindow) {
  const Model windowed(5);
  expect_cache_matches_plain_forward(windowed);
  GenerationOptions options;
  options.max_new_tokens = 12;
  const auto with = generate(windowed.weights(), windowed.config, kPrompts, options);
  const auto without = generate(Model().weights(), Model().config, kPrompts, options);
  bool differs = false;
  for (size_t i = 0; i < kPrompts.size(); ++i) differs = differs || with[i].ids != without[i].ids;
  EXPECT_TRUE(differs) << "the window changed no output";
}

TEST(Generation, OutputsDoNotDependOnBatchesOrTheirPlaceInThem) {
  const Model model;
  for (const double temperature : {0.0, 0.9}) {
    GenerationOptions options;
    options.max_new_tokens = 10;
    options.sampling = {temperature, 40, 0.95, 7};
    options.batch_size = 4;
    const auto together = generate(model.weights(), model.config, kPrompts, options);
    options.batch_size = 1;
    for (size_t i = 0; i < kPrompts.size(); ++i) {
      const auto alone = generate(model.weights(), model.config, {kPrompts[i]}, options, /*first_index=*/i);
      EXPECT_EQ(alone[0].ids, together[i].ids) << "temperature " << temperature << ", prompt " << i;
    }
  }
}

// A group of G completions per prompt (GRPO's num_generations) forks the prompt's prefilled
// cache: completion j of prompt i yields what request i * G + j yields when the prompt is listed
// G times and prefilled for each, in any batch size, in a dense model and in a hybrid one (whose
// Gated DeltaNet layers fork their conv inputs and state instead of keys and values). The
// group's completions differ (each has its own seed).
TEST(Generation, AGroupForksThePromptsCacheAndYieldsWhatTheRepeatedPromptsWould) {
  for (const char* preset : {"debug", "debug-qwen3.5"}) {
    const ModelConfig config = preset_config(preset);
    const TensorMap tensors = init_preset_weights(config, 11, at::kFloat);
    const LlamaWeights weights = llama_weights(tensors, config);
    const int64_t group = 3;
    std::vector<std::vector<int64_t>> repeated;
    for (const auto& prompt : kPrompts) repeated.insert(repeated.end(), group, prompt);
    GenerationOptions options;
    options.max_new_tokens = 8;
    options.sampling = {1.0, 0, 1.0, 5};
    options.batch_size = 5;
    const auto expected = generate(weights, config, repeated, options, /*first_index=*/group);
    options.completions_per_prompt = group;
    for (const int64_t batch_size : {1, 4, 7, 100}) {
      options.batch_size = batch_size;
      const auto grouped = generate(weights, config, kPrompts, options, /*first_index=*/1);
      ASSERT_EQ(grouped.size(), repeated.size()) << preset;
      for (size_t r = 0; r < grouped.size(); ++r) {
        EXPECT_EQ(grouped[r].ids, expected[r].ids) << preset << ", batch " << batch_size << ", completion " << r;
      }
    }
    EXPECT_NE(expected[0].ids, expected[1].ids) << preset << ": the group's completions are one draw";
  }
  // The stop predicate sees the completion's request index.
  const Model model;
  GenerationOptions options;
  options.max_new_tokens = 6;
  options.completions_per_prompt = 2;
  options.stop = [](size_t index, const std::vector<int64_t>& ids) { return index == 3 && ids.size() == 2; };
  const auto stopped = generate(model.weights(), model.config, kPrompts, options);
  EXPECT_EQ(stopped[3].finish, FinishReason::stop);
  EXPECT_EQ(stopped[3].ids.size(), 2u);
  EXPECT_EQ(stopped[2].ids.size(), 6u);
}

// A row whose completion ends takes the next request at once, and when none waits the batch
// halves: with 2 rows no forward carries an idle row, so the rows decoded are exactly the tokens
// after each completion's first (drawn from its prompt's prefill). Completions of very unequal
// lengths (EOS) yield what each request yields alone, and each prompt is prefilled once.
TEST(Generation, AFinishedRowTakesTheNextRequestAtOnce) {
  for (const char* preset : {"debug", "debug-qwen3.5"}) {
    const ModelConfig config = preset_config(preset);
    const TensorMap tensors = init_preset_weights(config, 11, at::kFloat);
    const LlamaWeights weights = llama_weights(tensors, config);
    std::vector<std::vector<int64_t>> prompts = kPrompts;
    prompts.push_back({8, 16, 24});
    prompts.push_back({2, 3});
    GenerationOptions options;
    options.max_new_tokens = 12;
    options.sampling = {1.0, 0, 1.0, 9};
    options.completions_per_prompt = 2;
    options.batch_size = 1;
    // Completions ended at these lengths (a stop predicate, as stop strings end them), and a token
    // drawn early in one completion ends the others where they draw it (EOS).
    const std::vector<size_t> ends = {12, 2, 9, 3, 1, 12, 5, 2, 11, 4, 7, 1};
    options.stop = [&ends](size_t index, const std::vector<int64_t>& ids) { return ids.size() == ends[index]; };
    options.eos_ids = {generate(weights, config, prompts, options)[2].ids[4]};
    const auto alone = generate(weights, config, prompts, options);
    std::vector<size_t> lengths;
    for (const auto& result : alone) lengths.push_back(result.ids.size());
    for (const int64_t batch_size : {2, 3, 5}) {
      options.batch_size = batch_size;
      GenerationStats stats;
      const auto batched = generate(weights, config, prompts, options, 0, &stats);
      ASSERT_EQ(batched.size(), alone.size());
      int64_t decoded = 0;  // tokens that needed a decode step
      int64_t batch_at_a_time = 0;  // the steps of decoding batch_size requests at a time to the longest
      for (size_t r = 0; r < alone.size(); ++r) {
        EXPECT_EQ(batched[r].ids, alone[r].ids) << preset << ", batch " << batch_size << ", completion " << r;
        ASSERT_EQ(batched[r].logps.size(), alone[r].logps.size());
        for (size_t t = 0; t < alone[r].logps.size(); ++t) {  // fp32 sums in another order: kLogpRounding
          EXPECT_NEAR(batched[r].logps[t], alone[r].logps[t], kLogpRounding) << preset << ", completion " << r;
        }
        EXPECT_EQ(batched[r].finish, alone[r].finish);
        decoded += static_cast<int64_t>(alone[r].ids.size()) - 1;
      }
      for (size_t first = 0; first < lengths.size(); first += static_cast<size_t>(batch_size)) {
        const auto end = lengths.begin() + static_cast<int64_t>(std::min(lengths.size(), first + batch_size));
        batch_at_a_time += static_cast<int64_t>(*std::max_element(lengths.begin() + static_cast<int64_t>(first), end)) - 1;
      }
      EXPECT_EQ(stats.prompts_prefilled, static_cast<int64_t>(prompts.size())) << preset << ", batch " << batch_size;
      EXPECT_LT(stats.decode_steps, batch_at_a_time) << preset << ", batch " << batch_size;
      EXPECT_GE(stats.row_steps, decoded);
      if (batch_size == 2) EXPECT_EQ(stats.row_steps, decoded) << preset << ": a forward carried an idle row";
    }
  }
}

TEST(Generation, SamplingFollowsItsSeedAndTopKOfOneIsGreedy) {
  const Model model;
  GenerationOptions options;
  options.max_new_tokens = 10;
  const auto greedy = generate(model.weights(), model.config, kPrompts, options);
  options.sampling = {1.0, 1, 1.0, 3};  // only the most likely token may be drawn
  EXPECT_EQ(generate(model.weights(), model.config, kPrompts, options)[2].ids, greedy[2].ids);
  options.sampling = {1.5, 0, 1.0, 3};
  const auto first = generate(model.weights(), model.config, kPrompts, options);
  EXPECT_EQ(generate(model.weights(), model.config, kPrompts, options)[0].ids, first[0].ids);
  options.sampling.seed = 4;
  EXPECT_NE(generate(model.weights(), model.config, kPrompts, options)[0].ids, first[0].ids);
  EXPECT_NE(first[0].ids, greedy[0].ids);
}

TEST(Generation, EosAndStopPredicatesEndRows) {
  const Model model;
  GenerationOptions options;
  options.max_new_tokens = 10;
  const auto free_run = generate(model.weights(), model.config, kPrompts, options);
  options.eos_ids = {free_run[1].ids[2]};  // prompt 1's third token ends it there (EOS kept)
  options.stop = [](size_t index, const std::vector<int64_t>& ids) { return index == 2 && ids.size() == 4; };
  const auto stopped = generate(model.weights(), model.config, kPrompts, options);
  EXPECT_EQ(stopped[1].finish, FinishReason::eos);
  EXPECT_EQ(stopped[1].ids, std::vector<int64_t>(free_run[1].ids.begin(), free_run[1].ids.begin() + 3));
  EXPECT_EQ(stopped[2].finish, FinishReason::stop);
  EXPECT_EQ(stopped[2].ids.size(), 4u);
}

}  // namespace
}  // namespace st

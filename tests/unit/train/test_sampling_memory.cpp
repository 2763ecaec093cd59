// What sampling holds on a rank (estimate_sampling_memory) against published figures, the rows
// a rank decodes at once by it, and the refusal that names it when not one fits.
#include <gtest/gtest.h>

#include <string>

#include "fsdp/memory_estimate.h"
#include "hf/presets.h"
#include "train/grpo_options.h"
#include "train/recompute_choice.h"
#include "train/sampled_completions.h"
#include "util/errors.h"

namespace st {
namespace {

const EstimateInputs kBf16;  // compute_bytes 2, no expert parallelism: only these enter

// Llama 3.2 1B: 1.24 B parameters; its KV cache is 32 KiB a token in bf16 (16 layers x keys and
// values x 8 KV heads x 64 dimensions x 2 bytes), so 128 rows of 768 tokens hold 3 GiB.
TEST(SamplingMemory, Llama32OneBillionAsPublished) {
  const ModelConfig config = preset_config("llama-3.2-1b");
  const SamplingMemory need = estimate_sampling_memory(config, 128, 768, kBf16);
  EXPECT_GT(config.parameter_count(), 1230000000);
  EXPECT_LT(config.parameter_count(), 1240000000);
  EXPECT_EQ(need.weights, config.parameter_count() * 2);
  EXPECT_EQ(need.caches, 3LL << 30);
  EXPECT_EQ(need.logits, 2LL * 128 * 128256 * 4);
}

// A hybrid's Gated DeltaNet layers hold a state of fixed size: only its attention layers (one in
// four in Qwen3.5) grow with the tokens.
TEST(SamplingMemory, HybridStateDoesNotGrowWithTokens) {
  const ModelConfig config = preset_config("qwen3.5-9b");
  int64_t attention_layers = 0;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) attention_layers += !config.gated_delta_layer(layer);
  EXPECT_EQ(attention_layers, config.num_hidden_layers / 4);
  const int64_t grown = estimate_sampling_memory(config, 8, 2000, kBf16).caches -
                        estimate_sampling_memory(config, 8, 1000, kBf16).caches;
  EXPECT_EQ(grown, attention_layers * 2 * 8 * 1000 * config.kv_size() * 2);
  // 16 key heads x 32 value heads x 128 x 128 state + the convolution's (2 x 2048 + 4096) x 4, in bf16
  const int64_t state = estimate_sampling_memory(config, 1, 0, kBf16).caches;
  EXPECT_EQ(state, (config.num_hidden_layers - attention_layers) * (32 * 128 * 128 + (2 * 2048 + 4096) * 4) * 2);
}

// Qwen3-30B-A3B (30.5 B parameters, 48 layers of 128 experts of 3 x 768 x 2048: 29.0 B of them)
// under dist.expert_parallel = 8: a rank gathers 1/8 of the routed experts, 5.2 B parameters
// (10.3 GB in bf16 where the whole model takes 61 GB), and 128 rows of 768 tokens fit in 40 GiB
// beside them (their caches 9.7 GB) where not one fits beside the whole model.
TEST(SamplingMemory, ExpertParallelRankHoldsItsRunOfExperts) {
  const ModelConfig config = preset_config("qwen3-30b-a3b");
  const int64_t experts = 48LL * 128 * 3 * 768 * 2048;
  TrainConfig run;  // the run's estimate inputs carry its split (what a GRPO run's rollouts size by)
  run.dist.expert_parallel = 8;
  const EstimateInputs split = run_estimate_inputs(run, 16, 2);
  EXPECT_EQ(split.expert_parallel, 8);
  EXPECT_GT(config.parameter_count(), 30500000000);
  EXPECT_LT(config.parameter_count(), 30600000000);
  EXPECT_EQ(estimate_sampling_memory(config, 8, 1024, kBf16).weights, config.parameter_count() * 2);
  EXPECT_EQ(estimate_sampling_memory(config, 8, 1024, split).weights, (config.parameter_count() - experts / 8 * 7) * 2);
  EXPECT_EQ(estimate_sampling_memory(config, 8, 1024, split).caches, estimate_sampling_memory(config, 8, 1024, kBf16).caches);
  const RolloutOptions& options = GrpoOptions().rollout;
  const int64_t free = 40LL << 30;  // an H100's 80 GB with the run's own shards and buffers in
  EXPECT_THROW(sampling_rows(config, SamplingShape{128, 8, 256, 512}, kBf16, free, options), ConfigError);
  EXPECT_EQ(sampling_rows(config, SamplingShape{128, 8, 256, 512}, split, free, options), 128);
}

// A rank decodes its whole share at once where it fits, else as many rows as fit (the others
// take the rows that finish), and refuses only where one completion does not fit.
TEST(SamplingMemory, AllRowsWhereTheyFitElseAsManyAsFitElseRefused) {
  const ModelConfig config = preset_config("llama-3.2-1b");
  const SamplingShape share{128, 8, 256, 512};
  // 128 rows of 768 tokens, and the 16 prompts of 256 prefilled for them.
  const int64_t need = estimate_sampling_memory(config, 128, 768, kBf16).total() +
                       estimate_sampling_memory(config, 16, 256, kBf16).caches;
  const RolloutOptions& options = GrpoOptions().rollout;
  EXPECT_EQ(sampling_rows(config, share, kBf16, need, options), 128);
  EXPECT_EQ(sampling_rows(config, share, kBf16, -1, options), 128);  // the CPU: no limit
  EXPECT_EQ(sampling_rows(config, share, kBf16, need - 1, options), 127);
  const int64_t forty = estimate_sampling_memory(config, 40, 768, kBf16).total() +
                        estimate_sampling_memory(config, 5, 256, kBf16).caches;
  EXPECT_EQ(sampling_rows(config, share, kBf16, forty + 1000, options), 40);
  EXPECT_EQ(sampling_rows(config, share, kBf16, forty - 1, options), 39);
  const int64_t one = estimate_sampling_memory(config, 1, 768, kBf16).total() +
                      estimate_sampling_memory(config, 1, 256, kBf16).caches;
  EXPECT_EQ(sampling_rows(config, share, kBf16, one, options), 1);
  try {
    sampling_rows(config, share, kBf16, one - 1, options);
    FAIL() << "sampling past the free memory was accepted";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    for (const char* part : {"sampling one completion of up to 768 tokens", "the whole model 2.30 GiB",
                             "grpo.max_completion_length", "data.cutoff_len", "grpo.rollouts"}) {
      EXPECT_NE(message.find(part), std::string::npos) << part << " not in: " << message;
    }
  }
}

}  // namespace
}  // namespace st

// Models whose layers differ (ModelConfig::layer_types: full and sliding-window layers, each kind
// with its own rotary base, Gemma 3): each kind's window and frequencies reach its layers, every
// attention path serves both kinds alike, and the embedding's scale is rounded as transformers
// rounds it.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "attention_layouts.h"
#include "hf/model_weights.h"
#include "hf/presets.h"
#include "model/llama_units.h"
#include "model/rope.h"

namespace st {
namespace {

using testing::attention_layout_cases;
using testing::AttentionLayoutCase;
using testing::layout_case_batch;
using testing::uneven_pairs;

// Each kind's frequencies as transformers' default and linear rope give them: 1 / theta^(2i/d),
// the full layers' divided by the linear factor.
TEST(LayerKinds, EachKindHasItsOwnRotaryBase) {
  const ModelConfig config = preset_config("debug-gemma3");
  const ModelAttention kinds = model_attention(config, at::kCPU);
  ASSERT_TRUE(kinds.sliding.inverse_frequencies.defined());
  EXPECT_EQ(kinds.full.window, 0);
  EXPECT_EQ(kinds.sliding.window, config.sliding_window);
  const int64_t half = config.head_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double exponent = 2.0 * static_cast<double>(i) / static_cast<double>(config.head_dim);
    const double local = 1.0 / std::pow(config.local_rope_theta, exponent);
    const double full = 1.0 / std::pow(config.rope_theta, exponent) / config.rope_scaling.factor;
    EXPECT_NEAR(kinds.sliding.inverse_frequencies[i].item<double>(), local, 1e-6 * local) << i;
    EXPECT_NEAR(kinds.full.inverse_frequencies[i].item<double>(), full, 1e-6 * full) << i;
  }
  // A model whose layers are alike has one kind, its window on every layer (Mistral's).
  ModelConfig alike = preset_config("debug");
  alike.sliding_window = 6;
  const ModelAttention one = model_attention(alike, at::kCPU);
  EXPECT_FALSE(one.sliding.inverse_frequencies.defined());
  EXPECT_EQ(one.full.window, 6);
}

// A sliding layer sees only its window; a full layer every earlier token. Three sliding layers of
// window 4 reach 3 x 3 = 9 tokens back: the last of 16 positions cannot see token 0's change;
// with the middle layer full, it does.
TEST(LayerKinds, ASlidingLayerSeesItsWindowAndAFullLayerEverything) {
  ModelConfig config = preset_config("debug-gemma3");
  config.sliding_window = 4;
  const TensorMap weights = init_preset_weights(config, 3, at::kDouble);
  at::Tensor ids = at::arange(3, 19, at::kLong).unsqueeze(0);
  at::Tensor changed = ids.clone();
  changed[0][0] = 40;
  const auto last_hidden = [&](const ModelConfig& c, const at::Tensor& input) {
    return llama_final_hidden(llama_weights(weights, c), c, input).select(1, 15);
  };
  ModelConfig sliding = config;
  sliding.layer_types.assign(3, AttentionType::sliding);
  EXPECT_TRUE(at::equal(last_hidden(sliding, ids), last_hidden(sliding, changed)));
  EXPECT_FALSE(at::equal(last_hidden(config, ids), last_hidden(config, changed)));  // sliding, full, sliding
  // Within reach (position 9 from token 0), the sliding layers see the change.
  const auto ninth = [&](const at::Tensor& input) {
    return llama_final_hidden(llama_weights(weights, sliding), sliding, input).select(1, 9);
  };
  EXPECT_FALSE(at::equal(ninth(ids), ninth(changed)));
}

// Every row layout (plain, packed, prompt-shared, both) with the sliding layers' window cutting
// the sequences: the varlen spans against the masked oracle, log-probs and every gradient, in
// fp32 and fp64 (the tolerances of AttentionSpans.ModelForwardAndBackwardEqualTheMaskedPath: the
// same two computations, per kind of layer).
TEST(LayerKinds, EveryAttentionPathServesBothKinds) {
  const ModelConfig config = preset_config("debug-gemma3");
  const TensorMap weights = init_preset_weights(config, 9, at::kFloat);
  for (const auto& [type, tolerance] : {std::pair{at::kFloat, 2e-5}, std::pair{at::kDouble, 1e-11}}) {
    for (const AttentionLayoutCase& each : attention_layout_cases()) {
      const AttentionLayoutCase c{each.name, each.packing, each.share_prompt, 5};
      const MicroBatch micro = layout_case_batch(uneven_pairs(7, 13), c);
      const auto varlen = testing::logps_and_grads(config, weights, micro, c, AttentionPath::varlen, at::kCPU, type);
      const auto masked = testing::logps_and_grads(config, weights, micro, c, AttentionPath::masked, at::kCPU, type);
      testing::expect_logps_and_grads_close(varlen, masked, tolerance, std::string(c.name) + " " + c10::toString(type));
    }
  }
}

// transformers multiplies the rows by sqrt(hidden_size) cast to the weights' dtype: in bf16,
// sqrt(1152) = 33.94 is 34.
TEST(LayerKinds, TheEmbeddingScaleIsRoundedToTheRowsDtype) {
  ModelConfig config = preset_config("debug-gemma3");
  config.hidden_size = 1152;
  const at::Tensor table = at::ones({3, 1152}, at::kBFloat16);
  const at::Tensor rows = embed_tokens(config, table, at::tensor({2, 0}, at::kLong));
  EXPECT_TRUE(at::equal(rows, at::full({2, 1152}, 34.0, at::kBFloat16)));
  EXPECT_NEAR(embed_tokens(config, table.to(at::kDouble), at::tensor({1}, at::kLong))[0][0].item<double>(),
              std::sqrt(1152.0), 1e-12);
  EXPECT_TRUE(at::equal(embed_tokens(preset_config("debug"), table, at::tensor({1}, at::kLong)), table.narrow(0, 0, 1)));
}

}  // namespace
}  // namespace st

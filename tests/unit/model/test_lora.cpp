// LoRA on the whole-model forward: PEFT's names and init, the first forward equal to the base's
// bit for bit, the adapter's effect equal to a merged weight (W + scale B A), and dropout masks
// that a recompute repeats.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "hf/model_weights.h"
#include "hf/presets.h"
#include "model/llama_units.h"
#include "model/lora.h"
#include "thrown_message.h"
#include "util/errors.h"

namespace st {
namespace {

using testing::thrown_message;

TEST(LoraTargets, ParseInModelOrderWithoutRepeats) {
  const std::vector<LoraTarget> targets = lora_targets(" down, q ,v,q");
  EXPECT_EQ(targets, (std::vector<LoraTarget>{LoraTarget::q, LoraTarget::v, LoraTarget::down}));
}

TEST(LoraTargets, UnknownWordNamesTheKeyAndTheChoices) {
  const std::string message = thrown_message<ConfigError>([] { lora_targets("q,qkv"); });
  EXPECT_NE(message.find("lora.target_modules"), std::string::npos) << message;
  EXPECT_NE(message.find("'qkv'"), std::string::npos) << message;
  EXPECT_NE(message.find("q|k|v|o|gate|up|down"), std::string::npos) << message;
  EXPECT_NE(thrown_message<ConfigError>([] { lora_targets(" , "); }), "");
}

TEST(LoraScale, AlphaOverRankOrOverItsRoot) {
  LoraOptions options;
  options.r = 16;
  options.alpha = 32;
  EXPECT_DOUBLE_EQ(lora_scale(options), 2.0);
  options.rslora = true;
  EXPECT_DOUBLE_EQ(lora_scale(options), 8.0);
}

TEST(LoraParams, PeftNamesShapesAndInit) {
  const ModelConfig config = preset_config("debug");
  const auto params = lora_layer_params(config, 1, {LoraTarget::k, LoraTarget::down}, 4);
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].name, "base_model.model.model.layers.1.self_attn.k_proj.lora_A.weight");
  EXPECT_EQ(params[0].shape, (std::vector<int64_t>{4, config.hidden_size}));
  EXPECT_EQ(params[1].name, "base_model.model.model.layers.1.self_attn.k_proj.lora_B.weight");
  EXPECT_EQ(params[1].shape, (std::vector<int64_t>{config.kv_size(), 4}));
  EXPECT_EQ(params[3].name, "base_model.model.model.layers.1.mlp.down_proj.lora_B.weight");
  EXPECT_EQ(params[2].shape, (std::vector<int64_t>{4, config.intermediate_size}));
  EXPECT_EQ(adapted_weight_name(1, LoraTarget::down), "model.layers.1.mlp.down_proj.weight");

  const at::Tensor a = init_parameter(params[2], 7);
  const double bound = 1.0 / std::sqrt(static_cast<double>(config.intermediate_size));
  EXPECT_LE(a.abs().max().item<double>(), bound);
  EXPECT_GT(a.abs().max().item<double>(), 0.9 * bound);  // uniform over the whole range
  EXPECT_TRUE(at::equal(a, init_parameter(params[2], 7)));
  EXPECT_FALSE(at::equal(a, init_parameter(params[2], 8)));
  EXPECT_EQ(init_parameter(params[3], 7).abs().sum().item<double>(), 0.0);
}

struct LoraModel {
  ModelConfig config;
  TensorMap base;
  TensorMap adapters;

  // Every target on every layer that holds it; B random (not zero) unless `zero_b`.
  explicit LoraModel(bool zero_b, int64_t r = 4, const char* preset = "debug")
      : config(preset_config(preset)), base(init_preset_weights(config, 3, at::kFloat)) {
    const std::vector<LoraTarget> all = lora_targets(kEveryLoraTarget);
    for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
      for (const ParamSpec& spec : lora_layer_params(config, layer, all, r)) {
        at::Tensor value = init_parameter(spec, 5);
        if (!zero_b && spec.init == ParamSpec::Init::zeros) value = at::randn(spec.shape) * 0.05;
        adapters[spec.name] = value;
      }
    }
  }
  TensorMap with_adapters() const {
    TensorMap all = base;
    all.insert(adapters.begin(), adapters.end());
    return all;
  }
};

TokenBatch test_batch(const ModelConfig& config, double scale) {
  at::manual_seed(11);
  const at::Tensor ids = at::randint(config.vocab_size, {3, 12}, at::kLong);
  at::Tensor targets = ids.roll(-1, 1);
  targets.narrow(1, 0, 4).fill_(kIgnoreTarget);
  TokenBatch batch = make_token_batch(ids, targets, rope_inverse_frequencies(config), at::kFloat, 5);
  batch.adapter.scale = scale;
  return batch;
}

TEST(LoraForward, ZeroBGivesTheBaseModelBitForBit) {
  const LoraModel model(/*zero_b=*/true);
  const TokenBatch batch = test_batch(model.config, 2.0);
  const at::Tensor base = llama_sequence_logps(llama_weights(model.base, model.config), model.config, batch);
  const at::Tensor adapted =
      llama_sequence_logps(llama_weights(model.with_adapters(), model.config), model.config, batch);
  EXPECT_TRUE(at::equal(base, adapted));
}

// Llama's projections, and a hybrid's: attention's in its attention layers, the Gated DeltaNet's
// five (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, out_proj) in the others.
TEST(LoraForward, EqualsTheMergedWeights) {
  for (const char* preset : {"debug", "debug-qwen3.5"}) {
    at::manual_seed(1);
    const LoraModel model(/*zero_b=*/false, 4, preset);
    const double scale = 1.5;
    const TokenBatch batch = test_batch(model.config, scale);
    TensorMap merged = model.base;
    int64_t adapted_weights_count = 0;
    for (int64_t layer = 0; layer < model.config.num_hidden_layers; ++layer) {
      for (const auto& entry : EnumNames<LoraTarget>::table) {
        for (const AdaptedWeight& piece : adapted_weights(model.config, layer, entry.value)) {
          merged[piece.weight] = merged.at(piece.weight) + model.adapters.at(lora_b_name(layer, entry.value))
                                                               .mm(model.adapters.at(lora_a_name(layer, entry.value))) *
                                                               scale;
          ++adapted_weights_count;
        }
      }
    }
    // debug: 7 projections x 2 layers; debug-qwen3.5: 7 in its attention layer, 5 + 3 in each of two others.
    EXPECT_EQ(adapted_weights_count, std::string(preset) == "debug" ? 14 : 7 + 2 * 8) << preset;
    const at::Tensor adapted =
        llama_sequence_logps(llama_weights(model.with_adapters(), model.config), model.config, batch);
    const at::Tensor from_merged = llama_sequence_logps(llama_weights(merged, model.config), model.config, batch);
    const at::Tensor base = llama_sequence_logps(llama_weights(model.base, model.config), model.config, batch);
    EXPECT_GT((adapted - base).abs().max().item<double>(), 1e-3) << preset;  // the adapters do something
    EXPECT_LT(((adapted - from_merged).abs().max() / from_merged.abs().max()).item<double>(), 1e-5) << preset;
  }
}

TEST(LoraDropout, MasksRepeatForASeedAndKeepTheRightShare) {
  at::manual_seed(2);
  const LoraPair pair{at::randn({4, 64}), at::randn({32, 4})};
  const at::Tensor x = at::randn({8, 50, 64});
  AdapterForward adapter{1.0, 0.25, 99};
  const at::Tensor first = lora_delta(x, pair, adapter, 3);
  EXPECT_TRUE(at::equal(first, lora_delta(x, pair, adapter, 3)));
  EXPECT_FALSE(at::equal(first, lora_delta(x, pair, adapter, 4)));
  adapter.dropout_seed = 100;
  EXPECT_FALSE(at::equal(first, lora_delta(x, pair, adapter, 3)));
  // The kept share of an all-ones input: A = identity rows pick inputs out.
  const LoraPair pick{at::eye(64), at::eye(64)};
  const at::Tensor ones = at::ones({100, 64});
  const at::Tensor kept = lora_delta(ones, pick, {1.0, 0.25, 7}, 0);
  EXPECT_NEAR(kept.ne(0).to(at::kDouble).mean().item<double>(), 0.75, 0.02);
  EXPECT_NEAR(kept.sum().item<double>() / ones.sum().item<double>(), 1.0, 0.03);  // 1 / (1 - p) rescaling
  const at::Tensor plain = lora_delta(ones, pick, {1.0, 0.0, 7}, 0);
  EXPECT_TRUE(at::equal(plain, ones));
}

}  // namespace
}  // namespace st

// Gemma 3's config.json as its checkpoints ship it: Gemma3ForCausalLM (1B) in transformers 4's
// keys, Gemma3ForConditionalGeneration (4B and up) with a text_config that leaves most keys to
// Gemma3TextConfig's defaults, transformers 5's per-kind rope_parameters; the presets, the export
// and the refusals of the neighbouring Gemmas by name.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "hf/model_config.h"
#include "hf/param_table.h"
#include "hf/presets.h"
#include "thrown_message.h"
#include "util/errors.h"

namespace st {
namespace {

using nlohmann::json;

json gemma3_1b() {  // google/gemma-3-1b-it's config.json
  return json::parse(R"({
    "architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": [1, 106],
    "final_logit_softcapping": null, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152,
    "initializer_range": 0.02, "intermediate_size": 6912, "max_position_embeddings": 32768,
    "model_type": "gemma3_text", "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
    "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
    "rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
    "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": true, "vocab_size": 262144})");
}

json gemma3_4b() {  // google/gemma-3-4b-it's config.json: its text_config holds only what differs
  return json::parse(R"({
    "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000,
    "eos_token_id": [1, 106], "image_token_index": 262144, "initializer_range": 0.02, "mm_tokens_per_image": 256,
    "model_type": "gemma3",
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                    "sliding_window": 1024},
    "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
    "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                      "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
                      "patch_size": 14, "vision_use_head": false}})");
}

std::string error_of(const json& config) {
  return testing::thrown_message<ModelError>([&] { parse_model_config(config, "m/config.json"); });
}

int64_t counted(const ModelConfig& config) {
  int64_t total = 0;
  for (const ParamSpec& spec : all_params(config)) total += spec.numel();
  return total;
}

TEST(Gemma3Config, Parses1BAsItShips) {
  const ModelConfig c = parse_model_config(gemma3_1b(), "config.json");
  EXPECT_EQ(c.model_type, ModelType::gemma3_text);
  EXPECT_FALSE(c.multimodal_text);
  ASSERT_EQ(c.layer_types.size(), 26u);
  for (size_t layer = 0; layer < c.layer_types.size(); ++layer) {  // five sliding, then one full
    EXPECT_EQ(c.layer_types[layer], (layer + 1) % 6 == 0 ? AttentionType::full : AttentionType::sliding) << layer;
    EXPECT_EQ(c.sliding_layer(static_cast<int64_t>(layer)), (layer + 1) % 6 != 0);
  }
  EXPECT_EQ(c.sliding_window, 512);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(c.local_rope_theta, 1e4);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::none);
  EXPECT_DOUBLE_EQ(c.query_pre_attn_scalar, 256);
  EXPECT_TRUE(c.qk_norm && c.tie_word_embeddings);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{1, 106}));
  // The published count (safetensors: 999,885,952), and the table's sum: four norms per layer.
  EXPECT_EQ(c.parameter_count(), 999885952);
  EXPECT_EQ(counted(c), c.parameter_count());
  EXPECT_EQ(to_hf_config_json(c), to_hf_config_json(preset_config("gemma-3-1b")));
}

TEST(Gemma3Config, ReadsTheLanguageModelOfTheImageTextCheckpoint) {
  const ModelConfig c = parse_model_config(gemma3_4b(), "config.json");
  EXPECT_EQ(c.model_type, ModelType::gemma3_text);
  EXPECT_TRUE(c.multimodal_text);
  // Gemma3TextConfig's defaults fill what text_config leaves out.
  EXPECT_EQ(c.vocab_size, 262208);
  EXPECT_EQ(c.num_attention_heads, 8);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.bos_token_id, 2);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{1, 106}));  // the wrapper's
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::linear);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 8.0);
  EXPECT_EQ(c.sliding_window, 1024);
  EXPECT_EQ(to_hf_config_json(c), to_hf_config_json(preset_config("gemma-3-4b")));
  // The export is the text model, which transformers loads as Gemma3ForCausalLM.
  const json exported = to_hf_config_json(c);
  EXPECT_EQ(exported["architectures"][0], "Gemma3ForCausalLM");
  EXPECT_EQ(exported["model_type"], "gemma3_text");
  EXPECT_EQ(exported["hidden_activation"], "gelu_pytorch_tanh");
  EXPECT_FALSE(exported.contains("hidden_act"));
  EXPECT_EQ(to_hf_config_json(parse_model_config(exported, "exported")), exported);
}

TEST(Gemma3Config, Transformers5RopeParametersPerKindOfLayer) {
  json config = gemma3_1b();
  for (const char* key : {"rope_theta", "rope_local_base_freq", "rope_scaling", "sliding_window_pattern"}) {
    config.erase(key);
  }
  config["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention"};
  config["num_hidden_layers"] = 3;
  config["rope_parameters"] = {{"full_attention", {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 5e5}}},
                               {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 2e4}}}};
  const ModelConfig c = parse_model_config(config, "config.json");
  EXPECT_EQ(c.layer_types, (std::vector<AttentionType>{AttentionType::sliding, AttentionType::full,
                                                        AttentionType::sliding}));
  EXPECT_DOUBLE_EQ(c.rope_theta, 5e5);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::linear);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 2.0);
  EXPECT_DOUBLE_EQ(c.local_rope_theta, 2e4);
  // Written back in the keys both transformers 4.50+ and 5 read.
  const json exported = to_hf_config_json(c);
  EXPECT_EQ(exported["layer_types"], json({"sliding_attention", "full_attention", "sliding_attention"}));
  EXPECT_DOUBLE_EQ(exported["rope_local_base_freq"].get<double>(), 2e4);
  EXPECT_EQ(to_hf_config_json(parse_model_config(exported, "exported")), exported);
}

TEST(Gemma3Config, PresetsCountWhatTheirTablesHold) {
  for (const char* name : {"gemma-3-1b", "gemma-3-4b", "gemma-3-12b", "gemma-3-27b", "debug-gemma3"}) {
    const ModelConfig c = preset_config(name);
    EXPECT_EQ(counted(c), c.parameter_count()) << name;
    EXPECT_EQ(to_hf_config_json(parse_model_config(to_hf_config_json(c), name)), to_hf_config_json(c)) << name;
  }
  // Gemma's norms scale by 1 + w: a fresh one starts at 0.
  for (const ParamSpec& spec : layer_params(preset_config("debug-gemma3"), 0)) {
    if (spec.name.find("norm") != std::string::npos) EXPECT_EQ(spec.init, ParamInit::zeros) << spec.name;
  }
  EXPECT_EQ(preset_config("gemma-3-27b").query_pre_attn_scalar, 168);  // hidden / heads, not head_dim 128
}

TEST(Gemma3Config, RefusalsNameTheFieldAndWhy) {
  json gemma2 = gemma3_1b();
  gemma2["model_type"] = "gemma2";
  EXPECT_NE(error_of(gemma2).find("soft-cap"), std::string::npos) << error_of(gemma2);
  json gemma4 = gemma3_1b();
  gemma4["model_type"] = "gemma4";
  EXPECT_NE(error_of(gemma4).find("'model_type' is 'gemma4'"), std::string::npos) << error_of(gemma4);
  json capped = gemma3_1b();
  capped["final_logit_softcapping"] = 30.0;
  EXPECT_NE(error_of(capped).find("'final_logit_softcapping' is set"), std::string::npos);
  json gelu = gemma3_1b();
  gelu["hidden_activation"] = "gelu";
  EXPECT_NE(error_of(gelu).find("'hidden_activation' is 'gelu'; gemma3_text MLPs use gelu_pytorch_tanh"),
            std::string::npos)
      << error_of(gelu);
  json bidirectional = gemma3_1b();
  bidirectional["use_bidirectional_attention"] = true;
  EXPECT_NE(error_of(bidirectional).find("use_bidirectional_attention"), std::string::npos);
  json short_types = gemma3_1b();
  short_types["layer_types"] = {"sliding_attention", "full_attention"};
  EXPECT_NE(error_of(short_types).find("'layer_types' must list one of"), std::string::npos) << error_of(short_types);
  json wrong_type = gemma3_1b();
  wrong_type["layer_types"] = json::array();
  for (int i = 0; i < 26; ++i) wrong_type["layer_types"].push_back(i == 3 ? "chunked_attention" : "full_attention");
  EXPECT_NE(error_of(wrong_type).find("\"chunked_attention\""), std::string::npos) << error_of(wrong_type);
  json no_text = gemma3_4b();
  no_text.erase("text_config");
  EXPECT_NE(error_of(no_text).find("m/config.json: field 'text_config' is missing"), std::string::npos)
      << error_of(no_text);
  json bad_text = gemma3_4b();
  bad_text["text_config"]["num_hidden_layers"] = -1;
  EXPECT_NE(error_of(bad_text).find("m/config.json (text_config): field 'num_hidden_layers'"), std::string::npos)
      << error_of(bad_text);
}

}  // namespace
}  // namespace st

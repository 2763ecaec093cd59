// Qwen3.5 / 3.6's config.json as the released checkpoints ship it (Qwen3_5ForConditionalGeneration,
// the language model's keys in text_config, transformers 5's rope_parameters with the multimodal
// rotary sections), the text model's own, the export's round trip and the refusals by name.
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

json layer_types(int64_t layers) {
  json types = json::array();
  for (int64_t l = 0; l < layers; ++l) types.push_back((l + 1) % 4 == 0 ? "full_attention" : "linear_attention");
  return types;
}

json qwen3_5_27b() {  // Qwen/Qwen3.5-27B's config.json (the vision_config abridged)
  json config = json::parse(R"({
    "architectures": ["Qwen3_5ForConditionalGeneration"], "image_token_id": 248056, "model_type": "qwen3_5",
    "text_config": {
      "attention_bias": false, "attention_dropout": 0.0, "attn_output_gate": true, "bos_token_id": null,
      "dtype": "bfloat16", "eos_token_id": 248044, "full_attention_interval": 4, "head_dim": 256,
      "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 17408,
      "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
      "linear_num_value_heads": 48, "linear_value_head_dim": 128, "mamba_ssm_dtype": "float32",
      "max_position_embeddings": 262144, "mlp_only_layers": [], "model_type": "qwen3_5_text",
      "mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": false, "num_attention_heads": 24,
      "num_hidden_layers": 64, "num_key_value_heads": 4, "pad_token_id": null, "partial_rotary_factor": 0.25,
      "rms_norm_eps": 1e-06,
      "rope_parameters": {"mrope_interleaved": true, "mrope_section": [11, 11, 10], "partial_rotary_factor": 0.25,
                          "rope_theta": 10000000, "rope_type": "default"},
      "tie_word_embeddings": false, "use_cache": true, "vocab_size": 248320},
    "tie_word_embeddings": false, "transformers_version": "4.57.0.dev0", "video_token_id": 248057,
    "vision_config": {"depth": 27, "hidden_size": 1152, "model_type": "qwen3_5", "num_heads": 16,
                      "out_hidden_size": 5120, "patch_size": 16},
    "vision_end_token_id": 248054, "vision_start_token_id": 248053})");
  config["text_config"]["layer_types"] = layer_types(64);
  return config;
}

json tiny_text() {  // tests/oracle/tiny_qwen3_5_model.py's Qwen3_5ForCausalLM
  return json::parse(R"({
    "architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text", "vocab_size": 97, "hidden_size": 32,
    "intermediate_size": 48, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 16, "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8,
    "linear_value_head_dim": 6, "linear_conv_kernel_dim": 4,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
    "rope_parameters": {"partial_rotary_factor": 0.25, "rope_theta": 10000.0, "rope_type": "default"},
    "max_position_embeddings": 512, "rms_norm_eps": 1e-06, "bos_token_id": 1, "eos_token_id": 2,
    "pad_token_id": 0, "tie_word_embeddings": false, "dtype": "float32"})");
}

std::string error_of(const json& config) {
  return testing::thrown_message<ModelError>([&] { parse_model_config(config, "m/config.json"); });
}

TEST(Qwen3_5Config, Parses27BAsItShips) {
  const ModelConfig c = parse_model_config(qwen3_5_27b(), "config.json");
  EXPECT_EQ(c.model_type, ModelType::qwen3_5_text);
  EXPECT_TRUE(c.multimodal_text);
  ASSERT_EQ(c.token_mixers.size(), 64u);
  int64_t linear = 0;
  for (int64_t l = 0; l < 64; ++l) linear += c.gated_delta_layer(l) ? 1 : 0;
  EXPECT_EQ(linear, 48);
  EXPECT_FALSE(c.gated_delta_layer(3));
  EXPECT_EQ(c.linear_attention.value_heads, 48);
  EXPECT_EQ(c.linear_attention.conv_channels(), 2 * 16 * 128 + 48 * 128);
  EXPECT_TRUE(c.attention_output_gate);
  EXPECT_EQ(c.rotary_dim(), 64);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e7);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{248044});
  EXPECT_EQ(c.torch_dtype, TorchDtype::bfloat16);
  EXPECT_EQ(c.parameter_count(), 26895998464);  // transformers' Qwen3_5ForCausalLM of this text_config
  EXPECT_STREQ(hf_architecture(c), "Qwen3_5ForCausalLM");
  EXPECT_EQ(checkpoint_model_type(c), "qwen3_5");
}

// The presets' counts are transformers' Qwen3_5ForCausalLM's of the same text_config (on the meta
// device): the 9B is Qwen3_5TextConfig's defaults.
TEST(Qwen3_5Config, PresetsCountAsTransformersDoes) {
  EXPECT_EQ(preset_config("qwen3.5-9b").parameter_count(), 8953803264);
  EXPECT_EQ(preset_config("qwen3.5-27b").parameter_count(), 26895998464);
  EXPECT_EQ(preset_config("qwen3.6-27b").parameter_count(), 26895998464);
  const ModelConfig defaults = parse_model_config(json::parse(R"({"model_type": "qwen3_5_text"})"), "config.json");
  EXPECT_EQ(defaults.parameter_count(), preset_config("qwen3.5-9b").parameter_count());
}

// Without layer_types, every full_attention_interval-th layer is full (transformers' rule); the
// text_config may leave the sizes to Qwen3_5TextConfig's defaults.
TEST(Qwen3_5Config, TheIntervalChoosesTheMixersWhereNoLayerTypes) {
  json config = json::parse(R"({"model_type": "qwen3_5", "text_config": {"num_hidden_layers": 6,
                                "full_attention_interval": 3}})");
  const ModelConfig c = parse_model_config(config, "config.json");
  EXPECT_EQ(c.token_mixers, (std::vector<TokenMixer>{TokenMixer::gated_delta, TokenMixer::gated_delta,
                                                      TokenMixer::attention, TokenMixer::gated_delta,
                                                      TokenMixer::gated_delta, TokenMixer::attention}));
  EXPECT_EQ(c.hidden_size, 4096);
  EXPECT_EQ(c.linear_attention.value_heads, 32);
  EXPECT_EQ(c.rotary_dim(), 64);  // partial_rotary_factor 0.25 of head_dim 256
}

TEST(Qwen3_5Config, TheExportReadsBackAsTheSameModel) {
  const ModelConfig c = parse_model_config(tiny_text(), "config.json");
  const json exported = to_hf_config_json(c);
  EXPECT_EQ(exported.at("rope_parameters").at("partial_rotary_factor"), 0.25);
  EXPECT_EQ(exported.at("layer_types").at(3), "full_attention");
  const ModelConfig back = parse_model_config(exported, "export/config.json");
  EXPECT_EQ(back.token_mixers, c.token_mixers);
  EXPECT_EQ(back.linear_attention.conv_channels(), c.linear_attention.conv_channels());
  EXPECT_EQ(back.rotary_dim(), 4);
  EXPECT_EQ(back.parameter_count(), c.parameter_count());
}

TEST(Qwen3_5Config, WhatItCannotComputeIsRefusedByField) {
  json sliding = tiny_text();
  sliding["layer_types"][0] = "sliding_attention";
  EXPECT_NE(error_of(sliding).find("m/config.json: field 'layer_types' holds \"sliding_attention\"; expected "
                                   "full_attention|linear_attention"),
            std::string::npos)
      << error_of(sliding);
  json short_types = tiny_text();
  short_types["layer_types"].erase(0);
  EXPECT_NE(error_of(short_types).find("field 'layer_types' must list one of"), std::string::npos);
  json heads = tiny_text();
  heads["linear_num_value_heads"] = 3;
  EXPECT_NE(error_of(heads).find("field 'linear_num_value_heads' = 3 must be a multiple of linear_num_key_heads = 2"),
            std::string::npos)
      << error_of(heads);
  json odd = tiny_text();
  odd["rope_parameters"]["partial_rotary_factor"] = 0.1;  // 1.6 -> 1 dimension: not a rotation
  EXPECT_NE(error_of(odd).find("field 'rope_parameters.partial_rotary_factor'"), std::string::npos) << error_of(odd);
  json scaled = tiny_text();
  scaled["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 1e4}};
  EXPECT_NE(error_of(scaled).find("field 'rope_parameters.rope_type'"), std::string::npos) << error_of(scaled);
  json zero = tiny_text();  // in a wrapper's text_config: the message names that part of the file
  zero["linear_key_head_dim"] = 0;
  json wrapped = json::parse(R"({"model_type": "qwen3_5"})");
  wrapped["text_config"] = zero;
  EXPECT_NE(error_of(wrapped).find("m/config.json (text_config): field 'linear_key_head_dim' must be > 0"),
            std::string::npos)
      << error_of(wrapped);
  for (const char* type : {"qwen3_next"}) {
    json other = tiny_text();
    other["model_type"] = type;
    EXPECT_NE(error_of(other).find(std::string("field 'model_type' is '") + type + "'"), std::string::npos)
        << error_of(other);
  }
}

}  // namespace
}  // namespace st

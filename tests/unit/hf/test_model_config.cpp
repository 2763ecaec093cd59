// config.json parsing: transformers 4.x and 5.x spellings, Qwen2 biases, and refusals that name
// the file and field.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "hf/model_config.h"
#include "hf/param_table.h"
#include "hf/presets.h"
#include "thrown_message.h"
#include "util/errors.h"

namespace st {
namespace {

using nlohmann::json;

json llama31_8b() {  // the public Llama-3.1-8B config.json
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
    "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0.dev0", "use_cache": true, "vocab_size": 128256})");
}

std::string error_of(const json& config) {
  return testing::thrown_message<ModelError>([&] { parse_model_config(config, "m/config.json"); });
}

TEST(ModelConfig, ParsesLlama31) {
  const ModelConfig c = parse_model_config(llama31_8b(), "config.json");
  EXPECT_EQ(c.hidden_size, 4096);
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_EQ(c.head_dim, 128);  // derived
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::llama3);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(c.parameter_count(), 8030261248);  // the published 8.03B
}

TEST(ModelConfig, MatchesThePresetOfTheSameModel) {
  const ModelConfig parsed = parse_model_config(llama31_8b(), "config.json");
  const ModelConfig preset = preset_config("llama-3.1-8b");
  EXPECT_EQ(to_hf_config_json(parsed), to_hf_config_json(preset));
}

TEST(ModelConfig, Transformers5RopeParameters) {
  json config = llama31_8b();
  config.erase("rope_scaling");
  config.erase("rope_theta");
  config["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 1e6}};
  const ModelConfig c = parse_model_config(config, "config.json");
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::linear);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 2.0);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
}

TEST(ModelConfig, Qwen2HasQkvBiasButNoOutputBias) {
  const json config = {{"model_type", "qwen2"}, {"vocab_size", 100}, {"hidden_size", 48},
                       {"intermediate_size", 80}, {"num_hidden_layers", 1},
                       {"num_attention_heads", 6}, {"num_key_value_heads", 2},
                       {"use_sliding_window", false}, {"sliding_window", 4096},
                       {"tie_word_embeddings", true}};
  const ModelConfig c = parse_model_config(config, "config.json");
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.o_proj_bias);
  EXPECT_EQ(c.head_dim, 8);
  // Its export names its architecture, writes no attention_bias (its biases are the family's)
  // and reads back the same.
  const json exported = to_hf_config_json(c);
  EXPECT_EQ(exported["architectures"][0], "Qwen2ForCausalLM");
  EXPECT_FALSE(exported.contains("attention_bias"));
  EXPECT_EQ(to_hf_config_json(parse_model_config(exported, "exported")), exported);
  // The family table: llama's biases come from attention_bias, and only mistral windows.
  const ModelConfig llama = parse_model_config(
      {{"model_type", "llama"}, {"vocab_size", 100}, {"hidden_size", 48}, {"intermediate_size", 80},
       {"num_hidden_layers", 1}, {"num_attention_heads", 6}, {"attention_bias", true}},
      "config.json");
  EXPECT_TRUE(llama.qkv_bias);
  EXPECT_TRUE(llama.o_proj_bias);
  EXPECT_FALSE(llama.qk_norm);
  EXPECT_EQ(to_hf_config_json(llama)["architectures"][0], "LlamaForCausalLM");
  EXPECT_EQ(to_hf_config_json(llama)["attention_bias"], true);
  EXPECT_FALSE(to_hf_config_json(llama).contains("sliding_window"));
}

json mistral_7b_v01() {  // the public Mistral-7B-v0.1 config.json
  return json::parse(R"({
    "architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 32768,
    "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16", "transformers_version": "4.34.0.dev0", "use_cache": true, "vocab_size": 32000})");
}

TEST(ModelConfig, ParsesMistralWithItsWindow) {
  const ModelConfig c = parse_model_config(mistral_7b_v01(), "config.json");
  EXPECT_EQ(c.model_type, ModelType::mistral);
  EXPECT_EQ(c.sliding_window, 4096);
  EXPECT_TRUE(c.window_limits(4097));
  EXPECT_FALSE(c.window_limits(4096));
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(c.parameter_count(), 7241732096);  // the published 7.24B
  EXPECT_EQ(to_hf_config_json(c), to_hf_config_json(preset_config("mistral-7b-v0.1")));
  const json exported = to_hf_config_json(c);
  EXPECT_EQ(exported["architectures"][0], "MistralForCausalLM");
  EXPECT_EQ(exported["sliding_window"], 4096);
  EXPECT_EQ(to_hf_config_json(parse_model_config(exported, "exported")), exported);
}

TEST(ModelConfig, MistralV03HasNoWindow) {
  json config = mistral_7b_v01();
  config["sliding_window"] = nullptr;
  config["vocab_size"] = 32768;
  config["rope_theta"] = 1e6;
  const ModelConfig c = parse_model_config(config, "config.json");
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_FALSE(c.window_limits(1 << 20));
  EXPECT_EQ(to_hf_config_json(c), to_hf_config_json(preset_config("mistral-7b-v0.3")));
  EXPECT_TRUE(to_hf_config_json(c)["sliding_window"].is_null());
  config["sliding_window"] = 0;
  EXPECT_NE(error_of(config).find("field 'sliding_window' must be > 0"), std::string::npos);
}

json qwen3_0_6b() {  // the public Qwen3-0.6B config.json
  return json::parse(R"({
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
    "initializer_range": 0.02, "intermediate_size": 3072, "max_position_embeddings": 40960,
    "max_window_layers": 28, "model_type": "qwen3", "num_attention_heads": 16, "num_hidden_layers": 28,
    "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000,
    "sliding_window": null, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
    "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})");
}

TEST(ModelConfig, ParsesQwen3WithItsQkNorms) {
  const ModelConfig c = parse_model_config(qwen3_0_6b(), "config.json");
  EXPECT_EQ(c.model_type, ModelType::qwen3);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.q_size(), 2048);  // wider than hidden_size: head_dim is its own
  EXPECT_EQ(to_hf_config_json(c), to_hf_config_json(preset_config("qwen3-0.6b")));
  const json exported = to_hf_config_json(c);
  EXPECT_EQ(exported["architectures"][0], "Qwen3ForCausalLM");
  EXPECT_EQ(to_hf_config_json(parse_model_config(exported, "exported")), exported);
  std::vector<std::string> norms;
  for (const ParamSpec& spec : all_params(c)) {
    if (spec.name.find("model.layers.0.self_attn.") == 0 && spec.shape == std::vector<int64_t>{128}) {
      norms.push_back(spec.name);
    }
  }
  EXPECT_EQ(norms, (std::vector<std::string>{"model.layers.0.self_attn.q_norm.weight",
                                             "model.layers.0.self_attn.k_norm.weight"}));
  json windowed = qwen3_0_6b();
  windowed["use_sliding_window"] = true;
  EXPECT_NE(error_of(windowed).find("use_sliding_window"), std::string::npos);
}

TEST(ModelConfig, ExplicitHeadDimWins) {
  json config = llama31_8b();
  config["head_dim"] = 64;
  EXPECT_EQ(parse_model_config(config, "c").head_dim, 64);
}

// Each mutation of a valid config must be refused with a message naming the file and field.
TEST(ModelConfig, RefusalsNameFileAndField) {
  const std::vector<std::pair<std::function<void(json&)>, std::string>> cases = {
      {[](json& c) { c["model_type"] = "gpt2"; }, "field 'model_type' is 'gpt2'"},
      {[](json& c) { c.erase("hidden_size"); }, "field 'hidden_size' is missing"},
      {[](json& c) { c["hidden_size"] = "4096"; }, "field 'hidden_size' must be an integer"},
      {[](json& c) { c["num_key_value_heads"] = 5; }, "field 'num_key_value_heads' = 5 must divide"},
      {[](json& c) { c["sliding_window"] = 4096; }, "field 'sliding_window' is set on a llama model"},
      {[](json& c) { c["rope_scaling"]["rope_type"] = "yarn"; }, "rope type 'yarn'"},
      {[](json& c) { c["rope_scaling"].erase("low_freq_factor"); },
       "field 'rope_scaling.low_freq_factor' is missing"},
      {[](json& c) { c["hidden_act"] = "gelu"; }, "field 'hidden_act' is 'gelu'"},
      {[](json& c) { c["final_logit_softcapping"] = 30.0; }, "field 'final_logit_softcapping'"},
      {[](json& c) { c["eos_token_id"] = 200000; }, "field 'eos_token_id' 200000 is outside"},
      {[](json& c) { c["vocab_size"] = 0; }, "field 'vocab_size' must be > 0"},
      {[](json& c) { c["torch_dtype"] = "int8"; }, "field 'torch_dtype' is 'int8'"},
  };
  for (const auto& [mutate, expected] : cases) {
    json config = llama31_8b();
    mutate(config);
    const std::string message = error_of(config);
    EXPECT_NE(message.find("m/config.json: "), std::string::npos) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << message << "\nexpected: " << expected;
  }
}

TEST(ModelConfig, Qwen2SlidingWindowInUseIsRefused) {
  const json config = {{"model_type", "qwen2"}, {"vocab_size", 100}, {"hidden_size", 48},
                       {"intermediate_size", 80}, {"num_hidden_layers", 1},
                       {"num_attention_heads", 6}, {"use_sliding_window", true}};
  EXPECT_NE(error_of(config).find("'use_sliding_window' is true"), std::string::npos);
}

TEST(ModelConfig, MissingFileNamesThePathAndTheFix) {
  try {
    load_model_config("/nonexistent/model");
    FAIL() << "no error";
  } catch (const ModelError& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/model/config.json: cannot open"),
              std::string::npos);
  }
  try {
    load_model_config("Qwen/Qwen3-0.6B");
    FAIL() << "no error";
  } catch (const ModelError& error) {
    EXPECT_NE(std::string(error.what()).find("model.path = Qwen/Qwen3-0.6B: a Hugging Face hub id, not a local directory; "
                                             "shardtune downloads nothing: fetch it with `hf download Qwen/Qwen3-0.6B "
                                             "--local-dir models/Qwen3-0.6B`, then set model.path = models/Qwen3-0.6B"),
              std::string::npos) << error.what();
  }
}

TEST(Presets, PublishedParameterCounts) {
  EXPECT_EQ(preset_config("llama-3.2-1b").parameter_count(), 1235814400);
  EXPECT_EQ(preset_config("llama-3.2-3b").parameter_count(), 3212749824);
  EXPECT_EQ(preset_config("llama-2-7b").parameter_count(), 6738415616);
  EXPECT_EQ(preset_config("tinyllama-1.1b").parameter_count(), 1100048384);
  EXPECT_EQ(preset_config("llama-3.1-70b").parameter_count(), 70553706496);
  EXPECT_EQ(preset_config("bench-100m").parameter_count(), 99496704);
  EXPECT_EQ(preset_config("mistral-7b-v0.1").parameter_count(), 7241732096);
  EXPECT_EQ(preset_config("mistral-7b-v0.3").parameter_count(), 7248023552);
  // Qwen3's model cards give them rounded: 0.6B with 0.44B non-embedding (tied), 8.2B with
  // 6.95B non-embedding.
  const double small = static_cast<double>(preset_config("qwen3-0.6b").parameter_count());
  EXPECT_NEAR(small / 1e9, 0.6, 0.005);
  EXPECT_NEAR((small - 151936.0 * 1024) / 1e9, 0.44, 0.005);
  const double eight = static_cast<double>(preset_config("qwen3-8b").parameter_count());
  EXPECT_NEAR(eight / 1e9, 8.2, 0.05);
  EXPECT_NEAR((eight - 2 * 151936.0 * 4096) / 1e9, 6.95, 0.005);
}

TEST(Presets, UnknownNameListsTheKnownOnes) {
  try {
    preset_config("llama-9");
    FAIL() << "no error";
  } catch (const ModelError& error) {
    EXPECT_NE(std::string(error.what()).find("known presets: debug, "), std::string::npos);
  }
  for (const auto& name : preset_names()) EXPECT_NO_THROW(preset_config(name)) << name;
}

}  // namespace
}  // namespace st

namespace st {
namespace {

// Llama-3.1-8B as transformers saves a reward model of it (AutoModelForSequenceClassification,
// num_labels=1, pad_token_id set as TRL sets it).
json llama31_8b_reward_model() {
  json config = llama31_8b();
  config["architectures"] = {"LlamaForSequenceClassification"};
  config["id2label"] = {{"0", "LABEL_0"}};
  config["label2id"] = {{"LABEL_0", 0}};
  config["pad_token_id"] = 128004;
  return config;
}

TEST(ModelConfig, ReadsAndWritesARewardModel) {
  const ModelConfig c = parse_model_config(llama31_8b_reward_model(), "rm/config.json");
  EXPECT_EQ(c.head, ModelHead::score);
  EXPECT_EQ(c.pad_token_id, 128004);
  EXPECT_FALSE(c.head_reads_embedding());
  EXPECT_STREQ(hf_architecture(c), "LlamaForSequenceClassification");
  // The embedding, the layers and a [1, hidden] score in place of the [vocab, hidden] lm_head.
  EXPECT_EQ(c.parameter_count(), 8030261248 - 128256LL * 4096 + 4096);
  const json written = to_hf_config_json(c);
  EXPECT_EQ(written["architectures"][0], "LlamaForSequenceClassification");
  EXPECT_EQ(written["id2label"].size(), 1u);
  EXPECT_EQ(written["pad_token_id"], 128004);
  const ModelConfig again = parse_model_config(written, "export/config.json");
  EXPECT_EQ(to_hf_config_json(again), written);
  // num_labels = 1 alone (no id2label) says the same; a causal LM's config writes none of it.
  json by_count = llama31_8b_reward_model();
  by_count.erase("id2label");
  by_count["num_labels"] = 1;
  EXPECT_EQ(parse_model_config(by_count, "rm/config.json").head, ModelHead::score);
  const json causal = to_hf_config_json(parse_model_config(llama31_8b(), "config.json"));
  EXPECT_FALSE(causal.contains("id2label") || causal.contains("pad_token_id"));
}

TEST(ModelConfig, AClassifierOfOtherThanOneLabelIsRefusedByField) {
  json two = llama31_8b_reward_model();
  two.erase("id2label");
  EXPECT_NE(error_of(two).find("field 'num_labels' gives 2 labels"), std::string::npos) << error_of(two);
  json three = llama31_8b_reward_model();
  three["id2label"] = {{"0", "a"}, {"1", "b"}, {"2", "c"}};
  EXPECT_NE(error_of(three).find("field 'id2label' gives 3 labels"), std::string::npos) << error_of(three);
  json pad = llama31_8b_reward_model();
  pad["pad_token_id"] = 128256;
  EXPECT_NE(error_of(pad).find("field 'pad_token_id' 128256 is outside the vocabulary"), std::string::npos)
      << error_of(pad);
  // A causal LM's odd pad id is ignored: only a score head reads it.
  json causal = llama31_8b();
  causal["pad_token_id"] = -1;
  EXPECT_EQ(parse_model_config(causal, "config.json").pad_token_id, -1);
}

}  // namespace
}  // namespace st

namespace st {
namespace {

json qwen3_30b_a3b() {  // the public Qwen3-30B-A3B config.json
  return json::parse(R"({
    "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144, "max_position_embeddings": 40960,
    "max_window_layers": 48, "mlp_only_layers": [], "model_type": "qwen3_moe", "moe_intermediate_size": 768,
    "norm_topk_prob": true, "num_attention_heads": 32, "num_experts": 128, "num_experts_per_tok": 8,
    "num_hidden_layers": 48, "num_key_value_heads": 4, "output_router_logits": false, "rms_norm_eps": 1e-06,
    "rope_scaling": null, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001, "sliding_window": null,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true,
    "use_sliding_window": false, "vocab_size": 151936})");
}

TEST(ModelConfig, ParsesQwen3MoeExperts) {
  const ModelConfig c = parse_model_config(qwen3_30b_a3b(), "config.json");
  EXPECT_EQ(c.model_type, ModelType::qwen3_moe);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.experts.num_experts, 128);
  EXPECT_EQ(c.experts.experts_per_token, 8);
  EXPECT_EQ(c.experts.expert_intermediate_size, 768);
  EXPECT_TRUE(c.experts.renormalize);
  EXPECT_DOUBLE_EQ(c.experts.router_aux_loss_coef, 0.001);
  EXPECT_EQ(c.sparse_layer_count(), 48);
  EXPECT_EQ(to_hf_config_json(c), to_hf_config_json(preset_config("qwen3-30b-a3b")));
  const json exported = to_hf_config_json(c);
  EXPECT_EQ(exported["architectures"][0], "Qwen3MoeForCausalLM");
  EXPECT_EQ(to_hf_config_json(parse_model_config(exported, "exported")), exported);
  json saved = qwen3_30b_a3b();  // transformers 5 saves num_local_experts; decoder_sparse_step 2, one layer dense
  saved.erase("num_experts");
  saved["num_local_experts"] = 128;
  saved["decoder_sparse_step"] = 2;
  saved["mlp_only_layers"] = {5};
  const ModelConfig stepped = parse_model_config(saved, "config.json");
  EXPECT_EQ(stepped.experts.num_experts, 128);
  EXPECT_FALSE(stepped.sparse_layer(0));
  EXPECT_TRUE(stepped.sparse_layer(1));
  EXPECT_FALSE(stepped.sparse_layer(5));
  EXPECT_EQ(stepped.sparse_layer_count(), 23);
}

TEST(ModelConfig, MoeRefusalsNameTheFieldAndWhy) {
  const std::vector<std::pair<std::function<void(json&)>, std::string>> cases = {
      {[](json& c) { c["model_type"] = "qwen2_moe"; }, "field 'model_type' is 'qwen2_moe': its family row"},
      {[](json& c) { c["model_type"] = "gpt_oss"; }, "field 'model_type' is 'gpt_oss': its router has a bias"},
      {[](json& c) { c["model_type"] = "deepseek_v3"; }, "grouped top-k router"},
      {[](json& c) { c["num_experts_per_tok"] = 200; }, "field 'num_experts_per_tok' = 200 exceeds the 128 experts"},
      {[](json& c) { c["mlp_only_layers"] = {48}; }, "field 'mlp_only_layers' holds 48, not a layer index"},
      {[](json& c) { c.erase("moe_intermediate_size"); }, "field 'moe_intermediate_size' is missing"},
      {[](json& c) { c["shared_expert_intermediate_size"] = 5632; }, "field 'shared_expert_intermediate_size' is set"},
  };
  for (const auto& [mutate, expected] : cases) {
    json config = qwen3_30b_a3b();
    mutate(config);
    const std::string message = error_of(config);
    EXPECT_NE(message.find(expected), std::string::npos) << message << "\nexpected: " << expected;
  }
  json mixtral = {{"model_type", "mixtral"}, {"vocab_size", 100}, {"hidden_size", 32}, {"intermediate_size", 64},
                  {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_local_experts", 8},
                  {"num_experts_per_tok", 2}, {"router_jitter_noise", 0.1}};
  EXPECT_NE(error_of(mixtral).find("field 'router_jitter_noise' is not 0"), std::string::npos);
  mixtral["router_jitter_noise"] = 0.0;
  const ModelConfig parsed = parse_model_config(mixtral, "config.json");
  EXPECT_TRUE(parsed.experts.renormalize);  // Mixtral always renormalises its top-k
  EXPECT_EQ(parsed.experts.expert_intermediate_size, 64);
  EXPECT_DOUBLE_EQ(parsed.experts.router_aux_loss_coef, 0.001);  // transformers' default when absent
}

// A model card prints a count to its last digit, rounded (Mistral: 12.88B -> "12.9B") or
// truncated (Qwen: 3.353B -> "3.3B"); our exact count must print as the card does under one of
// the two, which pins it to an interval one card digit wide, with no tolerance chosen by us.
bool prints_as_card(double count, double card, double digit) {
  const double units = count / digit;
  return std::llround(units) == std::llround(card / digit) ||
         static_cast<long long>(std::floor(units)) == std::llround(card / digit);
}

TEST(Presets, PublishedMoeParameterCounts) {
  // The model cards: Qwen3-30B-A3B 30.5B in total, 3.3B activated, 29.9B non-embedding;
  // Qwen3-235B-A22B 235B, 22B activated, 234B non-embedding; Mixtral 8x7B 46.7B, 12.9B active.
  const auto total = [](const ModelConfig& c) { return static_cast<double>(c.parameter_count()); };
  const auto active = [](const ModelConfig& c) { return static_cast<double>(c.active_parameter_count()); };
  const auto embeddings = [](const ModelConfig& c) {
    return 2.0 * static_cast<double>(c.vocab_size) * static_cast<double>(c.hidden_size);
  };
  const ModelConfig a3b = preset_config("qwen3-30b-a3b");
  EXPECT_TRUE(prints_as_card(total(a3b), 30.5e9, 0.1e9)) << total(a3b);
  EXPECT_TRUE(prints_as_card(active(a3b), 3.3e9, 0.1e9)) << active(a3b);
  EXPECT_TRUE(prints_as_card(total(a3b) - embeddings(a3b), 29.9e9, 0.1e9));
  const ModelConfig a22b = preset_config("qwen3-235b-a22b");
  EXPECT_TRUE(prints_as_card(total(a22b), 235e9, 1e9)) << total(a22b);
  EXPECT_TRUE(prints_as_card(active(a22b), 22e9, 1e9)) << active(a22b);
  EXPECT_TRUE(prints_as_card(total(a22b) - embeddings(a22b), 234e9, 1e9));
  const ModelConfig mixtral = preset_config("mixtral-8x7b");
  EXPECT_TRUE(prints_as_card(total(mixtral), 46.7e9, 0.1e9)) << total(mixtral);
  EXPECT_TRUE(prints_as_card(active(mixtral), 12.9e9, 0.1e9)) << active(mixtral);
}

}  // namespace
}  // namespace st

// Qwen3.5 / 3.6's mixture-of-experts config.json (Qwen3_5MoeForConditionalGeneration's text_config,
// or the text model's own): every layer sparse, the top-k always renormalised, a shared expert
// behind its sigmoid gate, no dense MLP; its parameters as transformers names and counts them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>

#include "hf/model_config.h"
#include "hf/param_table.h"
#include "hf/presets.h"
#include "thrown_message.h"
#include "util/errors.h"

namespace st {
namespace {

using nlohmann::json;

json tiny_text() {  // tests/oracle/tiny_qwen3_5_model.py's Qwen3_5MoeForCausalLM
  return json::parse(R"({
    "architectures": ["Qwen3_5MoeForCausalLM"], "model_type": "qwen3_5_moe_text", "vocab_size": 97,
    "hidden_size": 32, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 6,
    "linear_conv_kernel_dim": 4, "moe_intermediate_size": 12, "shared_expert_intermediate_size": 20,
    "num_experts": 4, "num_experts_per_tok": 2, "router_aux_loss_coef": 0.001, "output_router_logits": false,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
    "rope_parameters": {"partial_rotary_factor": 0.25, "rope_theta": 10000.0, "rope_type": "default"},
    "max_position_embeddings": 512, "rms_norm_eps": 1e-06, "bos_token_id": 1, "eos_token_id": 2,
    "pad_token_id": 0, "tie_word_embeddings": false, "dtype": "float32"})");
}

// The image-text wrapper at Qwen3_5MoeTextConfig's defaults, which its docstring names
// Qwen/Qwen3.5-35B-A3B's; 34,660,610,688 is transformers' Qwen3_5MoeForCausalLM of it (meta device).
TEST(Qwen3_5MoeConfig, TheWrappersDefaultsAreThe35BA3B) {
  const ModelConfig c = parse_model_config(json::parse(R"({"model_type": "qwen3_5_moe", "text_config": {}})"), "c.json");
  EXPECT_EQ(c.model_type, ModelType::qwen3_5_moe_text);
  EXPECT_TRUE(c.multimodal_text);
  EXPECT_EQ(c.experts.num_experts, 256);
  EXPECT_EQ(c.experts.experts_per_token, 8);
  EXPECT_EQ(c.experts.expert_intermediate_size, 512);
  EXPECT_EQ(c.experts.shared_intermediate_size, 512);
  EXPECT_TRUE(c.experts.renormalize);
  EXPECT_EQ(c.intermediate_size, 0);  // no dense MLP
  EXPECT_EQ(c.sparse_layer_count(), 40);
  EXPECT_EQ(c.parameter_count(), 34660610688);
  EXPECT_EQ(preset_config("qwen3.5-35b-a3b").parameter_count(), 34660610688);
  EXPECT_EQ(preset_config("qwen3.6-35b-a3b").parameter_count(), 34660610688);
  EXPECT_EQ(checkpoint_model_type(c), "qwen3_5_moe");
  EXPECT_STREQ(hf_architecture(c), "Qwen3_5MoeForCausalLM");
}

// transformers' config class has no norm_topk_prob, decoder_sparse_step or mlp_only_layers: the
// top-k is renormalised and every layer routes whatever a file says.
TEST(Qwen3_5MoeConfig, EveryLayerRoutesAndRenormalises) {
  json config = tiny_text();
  config["norm_topk_prob"] = false;
  config["decoder_sparse_step"] = 2;
  const ModelConfig c = parse_model_config(config, "c.json");
  EXPECT_TRUE(c.experts.renormalize);
  EXPECT_EQ(c.sparse_layer_count(), 4);
}

TEST(Qwen3_5MoeConfig, TheSharedExpertIsNamedAndShapedAsTransformersHoldsIt) {
  const ModelConfig c = parse_model_config(tiny_text(), "c.json");
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const ParamSpec& spec : layer_params(c, 0)) shapes[spec.name] = spec.shape;
  EXPECT_EQ(shapes.at("model.layers.0.mlp.gate.weight"), (std::vector<int64_t>{4, 32}));
  EXPECT_EQ(shapes.at("model.layers.0.mlp.shared_expert.gate_proj.weight"), (std::vector<int64_t>{20, 32}));
  EXPECT_EQ(shapes.at("model.layers.0.mlp.shared_expert.up_proj.weight"), (std::vector<int64_t>{20, 32}));
  EXPECT_EQ(shapes.at("model.layers.0.mlp.shared_expert.down_proj.weight"), (std::vector<int64_t>{32, 20}));
  EXPECT_EQ(shapes.at("model.layers.0.mlp.shared_expert_gate.weight"), (std::vector<int64_t>{1, 32}));
  EXPECT_EQ(shapes.count("model.layers.0.mlp.gate_proj.weight"), 0u);
  const std::vector<ParamSpec> experts = expert_params(c, 3);
  ASSERT_EQ(experts.size(), 12u);
  EXPECT_EQ(experts[0].name, "model.layers.3.mlp.experts.0.gate_proj.weight");
  EXPECT_EQ(experts[0].shape, (std::vector<int64_t>{12, 32}));
  // Transformers' Qwen3_5MoeForCausalLM of this config holds 52,938 parameters.
  int64_t total = 0;
  for (const ParamSpec& spec : all_params(c)) total += spec.numel();
  EXPECT_EQ(total, 52938);
  EXPECT_EQ(c.parameter_count(), 52938);
}

TEST(Qwen3_5MoeConfig, TheExportReadsBackAsTheSameModel) {
  const ModelConfig c = parse_model_config(tiny_text(), "c.json");
  const json exported = to_hf_config_json(c);
  EXPECT_FALSE(exported.contains("intermediate_size"));
  EXPECT_FALSE(exported.contains("norm_topk_prob"));
  EXPECT_EQ(exported.at("shared_expert_intermediate_size"), 20);
  EXPECT_EQ(exported.at("architectures").at(0), "Qwen3_5MoeForCausalLM");
  const ModelConfig back = parse_model_config(exported, "export/config.json");
  EXPECT_EQ(back.parameter_count(), c.parameter_count());
  EXPECT_EQ(back.experts.shared_intermediate_size, 20);
}

// PEFT 0.21 maps gate_proj, up_proj and down_proj on this model onto the shared expert's
// projections alone (all-linear adds its gate, a Linear(D, 1)), the routed experts unadapted: plain
// pairs under the shared expert's module names (PEFT's own names, as peft_load_parity loads them).
TEST(Qwen3_5MoeConfig, MlpAdaptersAdaptTheSharedExpertAsPeftDoes) {
  const ModelConfig c = parse_model_config(tiny_text(), "c.json");
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const ParamSpec& spec : lora_layer_params(c, 0, model_lora_targets(c), 4)) shapes[spec.name] = spec.shape;
  const std::string prefix = "base_model.model.model.layers.0.mlp.";
  EXPECT_EQ(shapes.at(prefix + "shared_expert.gate_proj.lora_A.weight"), (std::vector<int64_t>{4, 32}));
  EXPECT_EQ(shapes.at(prefix + "shared_expert.gate_proj.lora_B.weight"), (std::vector<int64_t>{20, 4}));
  EXPECT_EQ(shapes.at(prefix + "shared_expert.down_proj.lora_A.weight"), (std::vector<int64_t>{4, 20}));
  EXPECT_EQ(shapes.at(prefix + "shared_expert_gate.lora_B.weight"), (std::vector<int64_t>{1, 4}));
  for (const auto& [name, shape] : shapes) EXPECT_EQ(name.find("experts."), std::string::npos) << name;
  EXPECT_EQ(shapes.size(), 2u * (5 + 4));  // the Gated DeltaNet's five projections and the shared expert's four
  const std::vector<AdaptedWeight> up = adapted_weights(c, 3, LoraTarget::up);
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(up[0].weight, "model.layers.3.mlp.shared_expert.up_proj.weight");
  EXPECT_EQ(adapted_layer_param(c, LoraTarget::down), LayerParam::shared_down);
  // Without a shared expert the target names nothing the model holds.
  EXPECT_TRUE(held_lora_targets(preset_config("debug-moe"), {LoraTarget::shared_expert_gate}).empty());
}

TEST(Qwen3_5MoeConfig, ABadExpertSizeIsNamed) {
  json config = tiny_text();
  config["shared_expert_intermediate_size"] = 0;
  const std::string message =
      testing::thrown_message<ModelError>([&] { parse_model_config(config, "m/config.json"); });
  EXPECT_NE(message.find("m/config.json: field 'shared_expert_intermediate_size' must be > 0"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace st

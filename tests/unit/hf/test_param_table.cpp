// The parameter tables: each key declared by exactly one row, the HF and PEFT names and shapes
// that follow from them (transformers' LlamaForCausalLM / Qwen2ForCausalLM and PEFT's names),
// and the typed keys the FSDP engine binds gathered views by.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "hf/param_table.h"
#include "hf/presets.h"
#include "model/lora_options.h"

namespace st {
namespace {

TEST(ParamTable, EachKeyHasExactlyOneRow) {
  std::multiset<LayerParam> layer;
  std::multiset<LoraTarget> adapted;
  for (const LayerParamRow& row : kLayerRows) {
    layer.insert(row.key);
    if (row.adapter) adapted.insert(*row.adapter);
  }
  for (const ExpertParamRow& row : kExpertRows) layer.insert(row.key);
  EXPECT_EQ(layer.size(), kLayerParamCount);
  EXPECT_EQ(std::set<LayerParam>(layer.begin(), layer.end()).size(), kLayerParamCount);
  // Every target adapts some row; gate, up and down two each (the dense MLP's, a shared expert's).
  EXPECT_EQ(std::set<LoraTarget>(adapted.begin(), adapted.end()).size(), kLoraTargetCount);
  EXPECT_EQ(adapted.size(), kLoraTargetCount + 3);
  for (LoraTarget target : {LoraTarget::gate, LoraTarget::up, LoraTarget::down}) EXPECT_EQ(adapted.count(target), 2u);
  std::multiset<ModelParam> model;
  for (const ModelParamRow& row : kEmbeddingRows) model.insert(row.key);
  for (const ModelParamRow& row : kHeadRows) model.insert(row.key);
  EXPECT_EQ(std::set<ModelParam>(model.begin(), model.end()).size(), kModelParamCount);
  EXPECT_EQ(model.size(), kModelParamCount);
}

// transformers' Trainer (which TRL and LlamaFactory train with) decays every parameter whose name
// matches none of get_decay_parameter_names' patterns (transformers 5.24: "bias", "layernorm",
// "rmsnorm", "(?:^|\.)norm(?:$|\.)", "_norm(?:$|\.)"); shardtune decays the same ones by key. A
// Gated DeltaNet layer's A_log is 1-D and decayed; its dt_bias and gated norm are not.
TEST(ParamTable, WeightDecayIsTransformersTrainersByName) {
  const std::regex undecayed("bias|layernorm|rmsnorm|(?:^|\\.)norm(?:$|\\.)|_norm(?:$|\\.)");
  for (const char* preset : {"debug", "debug-gemma3", "debug-moe", "debug-qwen3.5"}) {
    ModelConfig config = preset_config(preset);
    config.qkv_bias = config.o_proj_bias = config.mlp_bias = true;
    for (const ParamSpec& spec : all_params(config)) {
      EXPECT_EQ(weight_decayed(spec.key), !std::regex_search(spec.name, undecayed)) << preset << " " << spec.name;
    }
    for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
      for (const ParamSpec& spec : lora_layer_params(config, layer, enum_values<LoraTarget>(), 4)) {
        EXPECT_TRUE(weight_decayed(spec.key)) << preset << " " << spec.name;
      }
    }
  }
  bool a_log = false;
  for (const ParamSpec& spec : all_params(preset_config("debug-qwen3.5"))) {
    if (spec.name == "model.layers.0.linear_attn.A_log") a_log = weight_decayed(spec.key);
  }
  EXPECT_TRUE(a_log);
}

// A target wraps the layers that hold its projection: PEFT's all-linear on a hybrid adapts its
// attention layers' q, k, v, o and its Gated DeltaNet layers' five projections; on Llama the
// latter are none (and a list of only those is refused at run setup, as PEFT refuses it).
TEST(ParamTable, LoraTargetsWrapTheLayersThatHoldThem) {
  const std::vector<LoraTarget> every = enum_values<LoraTarget>();
  EXPECT_EQ(held_lora_targets(preset_config("debug"), every), lora_targets("q,k,v,o,gate,up,down"));
  EXPECT_EQ(held_lora_targets(preset_config("debug-qwen3.5"), every),
            lora_targets("q,k,v,o,gate,up,down,in_proj_qkv,in_proj_z,in_proj_b,in_proj_a,out"));
  EXPECT_EQ(held_lora_targets(preset_config("debug-qwen3.5-moe"), every), every);  // and its shared expert's gate
  const ModelConfig hybrid = preset_config("debug-qwen3.5");  // gated delta, gated delta, attention
  const auto names = [&](int64_t layer) {
    std::set<std::string> out;
    for (const ParamSpec& spec : lora_layer_params(hybrid, layer, every, 2)) out.insert(spec.name);
    return out;
  };
  EXPECT_EQ(names(0).count("base_model.model.model.layers.0.linear_attn.in_proj_qkv.lora_A.weight"), 1u);
  EXPECT_EQ(names(0).count("base_model.model.model.layers.0.linear_attn.out_proj.lora_B.weight"), 1u);
  EXPECT_EQ(names(0).count("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"), 0u);
  EXPECT_EQ(names(2).count("base_model.model.model.layers.2.self_attn.q_proj.lora_A.weight"), 1u);
  EXPECT_EQ(names(2).count("base_model.model.model.layers.2.linear_attn.in_proj_z.lora_A.weight"), 0u);
  EXPECT_EQ(names(0).size(), 2u * 8);  // 5 Gated DeltaNet projections + the MLP's 3
  EXPECT_EQ(names(2).size(), 2u * 7);
}

TEST(ParamTable, LlamaLayerInStateDictOrderWithShapesFromTheConfig) {
  ModelConfig config = preset_config("debug");
  config.qkv_bias = config.o_proj_bias = config.mlp_bias = false;
  const std::vector<ParamSpec> params = layer_params(config, 3);
  const std::vector<std::string> suffixes = {"self_attn.q_proj.weight", "self_attn.k_proj.weight",
                                             "self_attn.v_proj.weight", "self_attn.o_proj.weight",
                                             "mlp.gate_proj.weight",    "mlp.up_proj.weight",
                                             "mlp.down_proj.weight",    "input_layernorm.weight",
                                             "post_attention_layernorm.weight"};
  ASSERT_EQ(params.size(), suffixes.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].name, "model.layers.3." + suffixes[i]);
    EXPECT_EQ(params[i].key.kind, ParamKey::Kind::layer);
    EXPECT_EQ(params[i].key.layer, 3);
    EXPECT_EQ(layer_param_name(3, params[i].key.member), params[i].name);
  }
  EXPECT_EQ(params[1].shape, (std::vector<int64_t>{config.kv_size(), config.hidden_size}));
  EXPECT_EQ(params[3].shape, (std::vector<int64_t>{config.hidden_size, config.q_size()}));
  EXPECT_EQ(params[6].shape, (std::vector<int64_t>{config.hidden_size, config.intermediate_size}));
  EXPECT_EQ(params[7].shape, (std::vector<int64_t>{config.hidden_size}));
  EXPECT_EQ(params[7].init, ParamInit::ones);
}

TEST(ParamTable, BiasFlagsAddTheBiasRowsAfterTheirWeights) {
  ModelConfig config = preset_config("debug");
  config.qkv_bias = true;  // Qwen2
  config.o_proj_bias = config.mlp_bias = false;
  const std::vector<ParamSpec> params = layer_params(config, 0);
  ASSERT_EQ(params.size(), 12u);
  EXPECT_EQ(params[1].name, "model.layers.0.self_attn.q_proj.bias");
  EXPECT_EQ(params[1].key.member, LayerParam::q_bias);
  EXPECT_EQ(params[1].shape, (std::vector<int64_t>{config.q_size()}));
  EXPECT_EQ(params[1].init, ParamInit::zeros);
  EXPECT_EQ(params[5].name, "model.layers.0.self_attn.v_proj.bias");
  EXPECT_EQ(params[6].name, "model.layers.0.self_attn.o_proj.weight");
}

TEST(ParamTable, TiedEmbeddingsDropTheHeadsOwnMatrix) {
  ModelConfig config = preset_config("debug");
  config.tie_word_embeddings = false;
  ASSERT_EQ(head_params(config).size(), 2u);
  EXPECT_EQ(head_params(config)[1].name, "lm_head.weight");
  EXPECT_TRUE(head_params(config)[1].key.is(ModelParam::lm_head));
  EXPECT_EQ(lm_head_param(config), ModelParam::lm_head);
  config.tie_word_embeddings = true;
  ASSERT_EQ(head_params(config).size(), 1u);
  EXPECT_EQ(head_params(config)[0].name, "model.norm.weight");
  EXPECT_EQ(lm_head_param(config), ModelParam::embed);
  EXPECT_EQ(embedding_params(config)[0].name, model_param_name(ModelParam::embed));
  EXPECT_EQ(all_params(config).size(), 1 + 9 * static_cast<size_t>(config.num_hidden_layers) + 1);
}

TEST(ParamTable, PeftNamesFollowTheAdaptedWeights) {
  EXPECT_EQ(peft_module_name(LoraTarget::q), "q_proj");
  EXPECT_EQ(peft_module_name(LoraTarget::down), "down_proj");
  EXPECT_EQ(adapted_param(LoraTarget::gate), LayerParam::gate_proj);
  EXPECT_EQ(adapted_weight_name(2, LoraTarget::o), "model.layers.2.self_attn.o_proj.weight");
  EXPECT_EQ(lora_a_name(2, LoraTarget::up), "base_model.model.model.layers.2.mlp.up_proj.lora_A.weight");
  const ModelConfig config = preset_config("debug");
  const std::vector<ParamSpec> pairs = lora_layer_params(config, 1, {LoraTarget::v, LoraTarget::down}, 4);
  ASSERT_EQ(pairs.size(), 4u);
  EXPECT_EQ(pairs[0].shape, (std::vector<int64_t>{4, config.hidden_size}));  // A [r, in]
  EXPECT_EQ(pairs[1].shape, (std::vector<int64_t>{config.kv_size(), 4}));    // B [out, r]
  EXPECT_EQ(pairs[3].shape, (std::vector<int64_t>{config.hidden_size, 4}));
  EXPECT_EQ(pairs[2].shape, (std::vector<int64_t>{4, config.intermediate_size}));
  EXPECT_EQ(pairs[1].key.kind, ParamKey::Kind::lora_b);
  EXPECT_EQ(pairs[1].key.target, LoraTarget::v);
  EXPECT_EQ(pairs[1].key.layer, 1);
}

}  // namespace
}  // namespace st

namespace st {
namespace {

TEST(ParamTable, AScoreHeadReplacesTheLmHeadTiedOrNot) {
  for (const bool tied : {false, true}) {
    ModelConfig config = preset_config("debug");
    config.tie_word_embeddings = tied;
    config.head = ModelHead::score;
    config.initializer_range = 0.05;
    const std::vector<ParamSpec> head = head_params(config);
    ASSERT_EQ(head.size(), 2u) << "tied " << tied;
    EXPECT_EQ(head[0].name, "model.norm.weight");
    EXPECT_EQ(head[1].name, "score.weight");
    EXPECT_EQ(head[1].shape, (std::vector<int64_t>{1, config.hidden_size}));
    EXPECT_TRUE(head[1].key.is(ModelParam::score));
    EXPECT_DOUBLE_EQ(head[1].init_std, 0.05);  // transformers' _init_weights: normal(0, initializer_range)
    EXPECT_EQ(embedding_params(config).size(), 1u);
  }
}

}  // namespace
}  // namespace st

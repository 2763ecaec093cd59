// Names and shapes follow transformers' LlamaForCausalLM / Qwen2ForCausalLM module order.
#include "model/hf_names.h"

namespace st {

int64_t ParamSpec::numel() const {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return count;
}

std::string layer_prefix(int64_t layer) { return "model.layers." + std::to_string(layer) + "."; }

std::vector<ParamSpec> embedding_params(const ModelConfig& config) {
  return {{kEmbedName, {config.vocab_size, config.hidden_size}}};
}

std::vector<ParamSpec> layer_params(const ModelConfig& config, int64_t layer) {
  const std::string prefix = layer_prefix(layer);
  const int64_t hidden = config.hidden_size;
  const int64_t inner = config.intermediate_size;
  std::vector<ParamSpec> params;
  auto linear = [&](const std::string& name, int64_t out, int64_t in, bool bias) {
    params.push_back({prefix + name + ".weight", {out, in}});
    if (bias) params.push_back({prefix + name + ".bias", {out}, ParamSpec::Init::zeros});
  };
  linear("self_attn.q_proj", config.q_size(), hidden, config.qkv_bias);
  linear("self_attn.k_proj", config.kv_size(), hidden, config.qkv_bias);
  linear("self_attn.v_proj", config.kv_size(), hidden, config.qkv_bias);
  linear("self_attn.o_proj", hidden, config.q_size(), config.o_proj_bias);
  linear("mlp.gate_proj", inner, hidden, config.mlp_bias);
  linear("mlp.up_proj", inner, hidden, config.mlp_bias);
  linear("mlp.down_proj", hidden, inner, config.mlp_bias);
  params.push_back({prefix + "input_layernorm.weight", {hidden}, ParamSpec::Init::ones});
  params.push_back({prefix + "post_attention_layernorm.weight", {hidden}, ParamSpec::Init::ones});
  return params;
}

std::vector<ParamSpec> head_params(const ModelConfig& config) {
  std::vector<ParamSpec> params{{kFinalNormName, {config.hidden_size}, ParamSpec::Init::ones}};
  if (!config.tie_word_embeddings) {
    params.push_back({kLmHeadName, {config.vocab_size, config.hidden_size}});
  }
  return params;
}

std::vector<ParamSpec> all_params(const ModelConfig& config) {
  std::vector<ParamSpec> params = embedding_params(config);
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    const auto unit = layer_params(config, layer);
    params.insert(params.end(), unit.begin(), unit.end());
  }
  const auto head = head_params(config);
  params.insert(params.end(), head.begin(), head.end());
  return params;
}

}  // namespace st

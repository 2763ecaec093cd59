// ModelConfig -> the config.json transformers loads as its class (hf_architecture): what an
// export writes and what a checkpoint records to name its model.
#include <nlohmann/json.hpp>

#include "hf/gated_delta_config.h"
#include "hf/model_config.h"

namespace st {

using nlohmann::json;

const char* hf_architecture(const ModelConfig& config) {
  const FamilySpec& family = family_of(config.model_type);
  return config.head == ModelHead::score ? family.reward_architecture : family.architecture;
}

json to_hf_config_json(const ModelConfig& config) {
  json out = {
      {"architectures", {hf_architecture(config)}},
      {"model_type", enum_name(config.model_type)},
      {"vocab_size", config.vocab_size},
      {"hidden_size", config.hidden_size},
      {"intermediate_size", config.intermediate_size},
      {"num_hidden_layers", config.num_hidden_layers},
      {"num_attention_heads", config.num_attention_heads},
      {"num_key_value_heads", config.num_key_value_heads},
      {"head_dim", config.head_dim},
      {"max_position_embeddings", config.max_position_embeddings},
      {"rms_norm_eps", config.rms_norm_eps},
      {"rope_theta", config.rope_theta},
      {"tie_word_embeddings", config.tie_word_embeddings},
      {"mlp_bias", config.mlp_bias},
      {"torch_dtype", enum_name(config.torch_dtype)},
      {"rope_scaling", nullptr},
  };
  const FamilySpec& spec = family_of(config.model_type);
  // Gemma's config classes name the key hidden_activation, the others hidden_act.
  out[spec.activation == Activation::silu ? "hidden_act" : "hidden_activation"] = enum_name(spec.activation);
  if (spec.biases == Biases::from_attention_bias) out["attention_bias"] = config.qkv_bias;
  if (spec.window == Window::layer_types) {
    out["sliding_window"] = config.sliding_window;
    out["layer_types"] = json::array();
    for (AttentionType kind : config.layer_types) out["layer_types"].push_back(enum_name(kind));
    out["rope_local_base_freq"] = config.local_rope_theta;
    out["attn_logit_softcapping"] = nullptr;
    out["final_logit_softcapping"] = nullptr;
  }
  if (spec.query_pre_attn_scalar) out["query_pre_attn_scalar"] = config.query_pre_attn_scalar;
  if (spec.window == Window::every_layer) {
    out["sliding_window"] = config.sliding_window > 0 ? json(config.sliding_window) : json(nullptr);
  }
  const RopeScaling& rope = config.rope_scaling;
  if (rope.type == RopeScaling::Type::linear) {
    out["rope_scaling"] = {{"rope_type", "linear"}, {"factor", rope.factor}};
  } else if (rope.type == RopeScaling::Type::llama3) {
    out["rope_scaling"] = {{"rope_type", "llama3"},
                           {"factor", rope.factor},
                           {"low_freq_factor", rope.low_freq_factor},
                           {"high_freq_factor", rope.high_freq_factor},
                           {"original_max_position_embeddings",
                            rope.original_max_position_embeddings}};
  }
  if (spec.mixers == Mixers::gated_delta_hybrid) write_hybrid_layers(config, out);
  const ExpertShape& experts = config.experts;
  if (spec.experts != Experts::none) {
    out["num_experts_per_tok"] = experts.experts_per_token;
    out["router_aux_loss_coef"] = experts.router_aux_loss_coef;
    out["output_router_logits"] = false;
  }
  if (spec.experts == Experts::qwen_shared) {
    out.erase("intermediate_size");  // every MLP sparse: its config class has no dense width
    out["num_experts"] = experts.num_experts;
    out["moe_intermediate_size"] = experts.expert_intermediate_size;
    out["shared_expert_intermediate_size"] = experts.shared_intermediate_size;
  } else if (spec.experts == Experts::qwen_moe) {
    out["num_experts"] = experts.num_experts;
    out["moe_intermediate_size"] = experts.expert_intermediate_size;
    out["norm_topk_prob"] = experts.renormalize;
    out["decoder_sparse_step"] = experts.sparse_step;
    out["mlp_only_layers"] = experts.dense_layers;
  } else if (spec.experts == Experts::mixtral) {
    out["num_local_experts"] = experts.num_experts;
    out["router_jitter_noise"] = 0.0;
  }
  if (config.bos_token_id >= 0) out["bos_token_id"] = config.bos_token_id;
  if (config.eos_token_ids.size() == 1) out["eos_token_id"] = config.eos_token_ids.front();
  if (config.eos_token_ids.size() > 1) out["eos_token_id"] = config.eos_token_ids;
  if (config.head == ModelHead::score) {  // transformers' save_pretrained spelling of num_labels = 1
    out["id2label"] = {{"0", "LABEL_0"}};
    out["label2id"] = {{"LABEL_0", 0}};
    out["pad_token_id"] = config.pad_token_id >= 0 ? json(config.pad_token_id) : json(nullptr);
  }
  return out;
}

}  // namespace st

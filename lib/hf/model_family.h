// The model families that share the Llama decoder, declared once: config.json's model_type word
// and, per family, what it changes in the decoder. config.json's reading, the export's config
// and the parameter table (through ModelConfig) follow the row. A family that reuses the
// decoder's pieces is its ModelType word and its row here (docs/architecture.md).
#pragma once

#include <string>

#include "util/enum_names.h"

namespace st {

// config.json's model_type.
enum class ModelType { llama, qwen2, mistral, qwen3, qwen3_moe, mixtral, gemma3_text, qwen3_5_text, qwen3_5_moe_text };
template <>
struct EnumNames<ModelType> {
  static constexpr NamedValue<ModelType> table[] = {
      {ModelType::llama, "llama"},         {ModelType::qwen2, "qwen2"},         {ModelType::mistral, "mistral"},
      {ModelType::qwen3, "qwen3"},         {ModelType::qwen3_moe, "qwen3_moe"}, {ModelType::mixtral, "mixtral"},
      {ModelType::gemma3_text, "gemma3_text"}, {ModelType::qwen3_5_text, "qwen3_5_text"},
      {ModelType::qwen3_5_moe_text, "qwen3_5_moe_text"}};
};

// per_layer: Qwen's use_sliding_window (refused); layer_types: each layer full or sliding as
// config.json's layer_types (or sliding_window_pattern) says, the sliding layers with their own
// rotary base (ModelConfig::local_rope_theta).
enum class Window { none, every_layer, per_layer, layer_types };
enum class Biases { none, qkv, from_attention_bias };  // qkv: Qwen2's q/k/v biases; else attention_bias
// Whether the MLP routes tokens to experts (model/moe_block.h), and how the checkpoint names them:
// qwen_moe: mlp.gate, mlp.experts.<e>.{gate,up,down}_proj, renormalising the top-k weights per
// norm_topk_prob; mixtral: block_sparse_moe.gate, block_sparse_moe.experts.<e>.{w1,w3,w2}, always
// renormalising; qwen_shared (Qwen3.5-MoE): qwen_moe's names, every layer sparse, always
// renormalising, and beside the routed experts a shared one (mlp.shared_expert.{gate,up,down}_proj,
// shared_expert_intermediate_size wide) whose output is scaled by sigmoid(mlp.shared_expert_gate).
// Every layer of a family with experts is sparse but those config.json keeps dense.
enum class Experts { none, qwen_moe, mixtral, qwen_shared };
// weight: x / rms(x), cast to the input's dtype, times w (Llama); one_plus_weight: (x / rms(x)) *
// (1 + w) in fp32, then cast (Gemma; the weights start at 0).
enum class NormStyle { weight, one_plus_weight };
// pre: a norm before attention and one before the MLP (post_attention_layernorm); sandwich: each
// branch's output normed too before its residual add (post_attention_layernorm on attention's
// output, pre_ and post_feedforward_layernorm around the MLP).
enum class LayerNorms { pre, sandwich };
// The MLP's gate activation, by config.json's hidden_act / hidden_activation word (transformers'
// ACT2FN keys): silu (SwiGLU), or GELU's tanh approximation (GeGLU).
enum class Activation { silu, gelu_tanh };
template <>
struct EnumNames<Activation> {
  static constexpr NamedValue<Activation> table[] = {{Activation::silu, "silu"},
                                                     {Activation::gelu_tanh, "gelu_pytorch_tanh"}};
};
// Which token mixer each layer runs: attention everywhere, or, in a hybrid, config.json's
// layer_types choosing per layer full_attention or linear_attention (Gated DeltaNet,
// model/gated_delta_mixer.h; every full_attention_interval-th layer full where it lists none).
enum class Mixers { attention, gated_delta_hybrid };
struct FamilySpec {
  ModelType type;
  const char* architecture;         // config.json "architectures" of an export
  const char* reward_architecture;  // the same with a reward model's score head (ModelHead::score)
  Window window;
  Biases biases;
  bool qk_norm;  // q and k RMS-normed per head before rotary
  Experts experts;
  NormStyle norm_style = NormStyle::weight;
  LayerNorms layer_norms = LayerNorms::pre;
  Activation activation = Activation::silu;
  bool scaled_embedding = false;     // the embedding's rows times sqrt(hidden_size), rounded to their dtype
  bool query_pre_attn_scalar = false;  // attention scaled by config.json's query_pre_attn_scalar^-0.5
  // transformers' config-class defaults of the keys a config.json may leave out (JSON), where
  // they differ from the Llama ones parse_model_config assumes; nullptr: none.
  const char* config_defaults = nullptr;
  Mixers mixers = Mixers::attention;
  // q_proj emits each head's query and then its output gate ([.., heads, 2 head_dim]); the
  // attention output is multiplied by sigmoid(gate) before o_proj (Qwen3.5).
  bool attention_output_gate = false;
};
inline constexpr FamilySpec kFamilies[] = {
    {ModelType::llama, "LlamaForCausalLM", "LlamaForSequenceClassification", Window::none, Biases::from_attention_bias,
     false, Experts::none},
    {ModelType::qwen2, "Qwen2ForCausalLM", "Qwen2ForSequenceClassification", Window::per_layer, Biases::qkv, false,
     Experts::none},
    {ModelType::mistral, "MistralForCausalLM", "MistralForSequenceClassification", Window::every_layer, Biases::none,
     false, Experts::none},
    {ModelType::qwen3, "Qwen3ForCausalLM", "Qwen3ForSequenceClassification", Window::per_layer,
     Biases::from_attention_bias, true, Experts::none},
    {ModelType::qwen3_moe, "Qwen3MoeForCausalLM", "Qwen3MoeForSequenceClassification", Window::per_layer,
     Biases::from_attention_bias, true, Experts::qwen_moe},
    {ModelType::mixtral, "MixtralForCausalLM", "MixtralForSequenceClassification", Window::every_layer, Biases::none,
     false, Experts::mixtral},
    // Gemma 3's text model (Gemma3TextConfig's defaults: the 4B, as Gemma3ForConditionalGeneration's
    // text_config leaves them out).
    {ModelType::gemma3_text, "Gemma3ForCausalLM", "Gemma3TextForSequenceClassification", Window::layer_types,
     Biases::from_attention_bias, true, Experts::none, NormStyle::one_plus_weight, LayerNorms::sandwich,
     Activation::gelu_tanh, true, true,
     R"({"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
         "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131072,
         "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
         "query_pre_attn_scalar": 256, "sliding_window": 4096, "sliding_window_pattern": 6,
         "tie_word_embeddings": true, "hidden_activation": "gelu_pytorch_tanh", "bos_token_id": 2,
         "eos_token_id": 1, "pad_token_id": 0})"},
    // Qwen3.5 / 3.6's text model (Qwen3_5TextConfig's defaults, as the image-text wrapper's
    // text_config leaves them out): three Gated DeltaNet layers to one gated full-attention layer,
    // (1 + w) norms, rotary over a quarter of the head.
    {ModelType::qwen3_5_text, "Qwen3_5ForCausalLM", "Qwen3_5TextForSequenceClassification", Window::none,
     Biases::from_attention_bias, true, Experts::none, NormStyle::one_plus_weight, LayerNorms::pre, Activation::silu,
     false, false,
     R"({"vocab_size": 248320, "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 32,
         "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 32768,
         "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "partial_rotary_factor": 0.25, "tie_word_embeddings": false,
         "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
         "linear_num_key_heads": 16, "linear_num_value_heads": 32, "full_attention_interval": 4})",
     Mixers::gated_delta_hybrid, true},
    // Qwen3.5 / 3.6's mixture-of-experts text model (Qwen3_5MoeTextConfig's defaults: the 35B-A3B):
    // the dense one's layers with every MLP sparse and a shared expert.
    {ModelType::qwen3_5_moe_text, "Qwen3_5MoeForCausalLM", "Qwen3_5MoeTextForSequenceClassification", Window::none,
     Biases::from_attention_bias, true, Experts::qwen_shared, NormStyle::one_plus_weight, LayerNorms::pre,
     Activation::silu, false, false,
     R"({"vocab_size": 248320, "hidden_size": 2048, "num_hidden_layers": 40, "num_attention_heads": 16,
         "num_key_value_heads": 2, "head_dim": 256, "max_position_embeddings": 32768, "rms_norm_eps": 1e-6,
         "rope_theta": 10000.0, "partial_rotary_factor": 0.25, "tie_word_embeddings": false,
         "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
         "linear_num_key_heads": 16, "linear_num_value_heads": 32, "full_attention_interval": 4,
         "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512, "num_experts_per_tok": 8,
         "num_experts": 256, "router_aux_loss_coef": 0.001})",
     Mixers::gated_delta_hybrid, true}};

// PEFT 0.21's target modules where LoraConfig names none (TRL 1.16's use_peft without
// lora_target_modules), by model_type, as its TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING
// lists them (lora.target_modules words). A family not here has none there: PEFT raises
// "Please specify `target_modules`".
struct PeftDefaultTargets {
  ModelType type;
  const char* modules;
};
inline constexpr PeftDefaultTargets kPeftDefaultTargets[] = {
    {ModelType::llama, "q,v"}, {ModelType::qwen2, "q,v"},   {ModelType::mistral, "q,v"},
    {ModelType::qwen3, "q,v"}, {ModelType::mixtral, "q,v"}, {ModelType::gemma3_text, "q,v"}};

// Image-text checkpoints whose language model is a family above (Gemma3ForConditionalGeneration):
// config.json's text_config is that family's config (its wrapper's token ids where it has none),
// the weights sit under language_model (hf/expert_checkpoint.h reads them by the text model's
// names); the vision tower and projector are left out of training.
struct MultimodalWrapper {
  const char* model_type;
  ModelType text_type;
  const char* peft_target_modules = nullptr;  // as kPeftDefaultTargets, for the wrapper's model_type
  // An export of a fine-tuned language model keeps the checkpoint's own layout: the text model
  // under the wrapper's names, every other tensor (the vision tower, multi-token prediction's
  // mtp.*) copied as stored, the wrapper's config.json (hf/expert_checkpoint.h WrapperLayout), so
  // the export serves wherever the base does. Else the export is the text model alone.
  bool export_keeps_layout = false;
};
inline constexpr MultimodalWrapper kMultimodalWrappers[] = {{"gemma3", ModelType::gemma3_text},
                                                            {"qwen3_5", ModelType::qwen3_5_text, nullptr, true},
                                                            {"qwen3_5_moe", ModelType::qwen3_5_moe_text, nullptr, true}};

// The wrapper whose language model is of `text_type`, or nullptr.
inline const MultimodalWrapper* multimodal_wrapper_of(ModelType text_type) {
  for (const MultimodalWrapper& wrapper : kMultimodalWrappers) {
    if (wrapper.text_type == text_type) return &wrapper;
  }
  return nullptr;
}

// The wrapper whose model_type `model_type` is, or nullptr.
inline const MultimodalWrapper* multimodal_wrapper(const std::string& model_type) {
  for (const MultimodalWrapper& wrapper : kMultimodalWrappers) {
    if (model_type == wrapper.model_type) return &wrapper;
  }
  return nullptr;
}

// Neighbouring model types refused by name, with what they would need (config.json's model_type).
struct RefusedType {
  const char* model_type;
  const char* why;
};
inline constexpr RefusedType kRefusedTypes[] = {
    {"qwen2_moe", "its family row (q/k/v biases, norm_topk_prob and decoder_sparse_step beside a shared expert) is "
                  "not built; Qwen3-MoE and Qwen3.5-MoE are (model_type qwen3_moe, qwen3_5_moe)"},
    {"gpt_oss", "its router has a bias and its experts interleave gate and up with clamped activations; not built"},
    {"deepseek_v2", "its grouped top-k router and multi-head latent attention (MLA) are not built"},
    {"deepseek_v3", "its grouped top-k router and multi-head latent attention (MLA) are not built"},
    {"llama4", "its shared expert, sigmoid router and chunked attention are not built"},
    {"llama4_text", "its shared expert, sigmoid router and chunked attention are not built"},
    {"gemma", "Gemma 1 is not built (Gemma 3 is: model_type gemma3_text, or gemma3's language model)"},
    {"gemma2", "its attention logit soft-cap (50) and final logit soft-cap (30) are not built; Gemma 3 is "
               "(model_type gemma3_text, or gemma3's language model)"},
    {"gemma3n", "its per-layer embeddings, AltUp and LAuReL blocks are not built; Gemma 3 is"},
    {"gemma4", "Gemma 4 is not built yet; Gemma 3 is (model_type gemma3_text, or gemma3's language model)"},
    {"qwen3_next", "its Gated DeltaNet projections come fused and interleaved per key head (in_proj_qkvz, in_proj_ba), "
                   "a layout not read; Qwen3.5 and Qwen3.6 are (model_type qwen3_5, qwen3_5_moe)"}};

// The row of `type`; throws ModelError for a word without one.
const FamilySpec& family_of(ModelType type);

}  // namespace st

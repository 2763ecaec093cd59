// ModelConfig: the shape and numerics of a Llama-family model, read from a Hugging Face
// config.json (transformers 4.x and 5.x spellings) or taken from a preset. Fields the model code
// does not implement (soft-capping, other rope types, Qwen2's per-layer windows) are refused,
// never ignored.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "hf/model_family.h"
#include "util/enum_names.h"

namespace st {

// config.json's torch_dtype: the dtype the checkpoint's weights are stored in.
enum class TorchDtype { float32, bfloat16, float16 };
template <>
struct EnumNames<TorchDtype> {
  static constexpr NamedValue<TorchDtype> table[] = {
      {TorchDtype::float32, "float32"}, {TorchDtype::bfloat16, "bfloat16"}, {TorchDtype::float16, "float16"}};
};

struct RopeScaling {
  enum class Type { none, linear, llama3 };
  Type type = Type::none;
  double factor = 1.0;                            // linear and llama3
  double low_freq_factor = 1.0;                   // llama3
  double high_freq_factor = 4.0;                  // llama3
  int64_t original_max_position_embeddings = 0;   // llama3
};

// config.json quantization_config: how the checkpoint stores its projection weights. full: in
// torch_dtype; bnb_nf4: bitsandbytes' 4-bit NormalFloat (transformers load_in_4bit), which only a
// QLoRA run reads, as its frozen base without re-quantizing (fsdp/nf4_checkpoint.h).
enum class WeightStorage { full, bnb_nf4 };

// What the last hidden states become: lm, next-token logits (*ForCausalLM); score, one scalar
// per sequence read at its last non-padding token (*ForSequenceClassification with num_labels
// 1: a reward model; train.stage = rm).
enum class ModelHead { lm, score };

// A mixture-of-experts MLP (FamilySpec::experts; model/moe_block.h): how many experts, how many
// each token is routed to, and which layers route.
struct ExpertShape {
  int64_t num_experts = 0;               // 0: every MLP is dense
  int64_t experts_per_token = 0;         // top-k
  int64_t expert_intermediate_size = 0;  // each expert's SwiGLU width
  bool renormalize = false;              // the top-k weights divided by their sum (norm_topk_prob; Mixtral always)
  int64_t sparse_step = 1;               // decoder_sparse_step: layer l routes when (l + 1) % step == 0
  std::vector<int64_t> dense_layers;     // mlp_only_layers: kept dense whatever the step
  double router_aux_loss_coef = 0.0;     // config.json's coefficient of the load-balancing loss
  // The shared expert's SwiGLU width (Experts::qwen_shared: shared_expert_intermediate_size); 0: none.
  int64_t shared_intermediate_size = 0;
};

// What a layer attends over (config.json layer_types): every earlier token, or a sliding window.
enum class AttentionType { full, sliding };
template <>
struct EnumNames<AttentionType> {
  static constexpr NamedValue<AttentionType> table[] = {{AttentionType::full, "full_attention"},
                                                        {AttentionType::sliding, "sliding_attention"}};
};

// A hybrid's token mixer per layer (config.json layer_types; FamilySpec::mixers): attention, or the
// Gated DeltaNet linear attention (model/gated_delta_mixer.h).
enum class TokenMixer { attention, gated_delta };
template <>
struct EnumNames<TokenMixer> {
  static constexpr NamedValue<TokenMixer> table[] = {{TokenMixer::attention, "full_attention"},
                                                     {TokenMixer::gated_delta, "linear_attention"}};
};
// The Gated DeltaNet layers' sizes (config.json linear_*).
struct LinearAttentionShape {
  int64_t key_heads = 0, value_heads = 0;        // linear_num_key_heads, linear_num_value_heads
  int64_t key_head_dim = 0, value_head_dim = 0;  // linear_key_head_dim, linear_value_head_dim
  int64_t conv_kernel = 4;                       // linear_conv_kernel_dim (transformers' default)

  int64_t key_dim() const { return key_heads * key_head_dim; }
  int64_t value_dim() const { return value_heads * value_head_dim; }
  int64_t conv_channels() const { return 2 * key_dim() + value_dim(); }  // in_proj_qkv's q, k, v
};

struct ModelConfig {
  ModelType model_type = ModelType::llama;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;   // < num_attention_heads means grouped-query attention
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  int64_t sliding_window = 0;        // a windowed layer's token sees itself and the window - 1 before it; 0: all
  // Per layer, when layers differ (Window::layer_types): full layers see every earlier token with
  // rope_theta and rope_scaling, sliding ones the window with local_rope_theta unscaled. Empty:
  // every layer alike, windowed when sliding_window > 0 (Mistral).
  std::vector<AttentionType> layer_types;
  double local_rope_theta = 10000.0;  // the sliding layers' rotary base (layer_types only)
  // A hybrid's mixer per layer (Mixers::gated_delta_hybrid); empty: attention in every layer.
  std::vector<TokenMixer> token_mixers;
  LinearAttentionShape linear_attention;  // the gated_delta layers' (hybrids only)
  bool attention_output_gate = false;     // FamilySpec::attention_output_gate
  double partial_rotary_factor = 1.0;     // rotary over the head's first head_dim x this dimensions
  double query_pre_attn_scalar = 0;  // attention scores scaled by its ^-0.5; 0: by head_dim's
  bool multimodal_text = false;      // the language model of an image-text checkpoint (kMultimodalWrappers)
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;             // Llama attention_bias, or Qwen2 (always)
  bool o_proj_bias = false;          // Llama attention_bias only
  bool mlp_bias = false;
  bool qk_norm = false;              // Qwen3: RMSNorm over each head's q and k, before rotary
  int64_t bos_token_id = -1;         // -1: none
  std::vector<int64_t> eos_token_ids;
  TorchDtype torch_dtype = TorchDtype::bfloat16;
  WeightStorage weight_storage = WeightStorage::full;
  bool nf4_double_quant = false;     // bnb_nf4: absmax in 8 bits (bnb_4bit_use_double_quant)
  ModelHead head = ModelHead::lm;
  // The score head reads each sequence's last token that is not this one (transformers' rule);
  // -1: none. Written to config.json only with the score head.
  int64_t pad_token_id = -1;
  double initializer_range = 0.02;   // std of a new weight (transformers' _init_weights)
  ExpertShape experts;

  // The head's logits multiply by the embedding (tied) rather than their own lm_head.
  bool head_reads_embedding() const { return head == ModelHead::lm && tie_word_embeddings; }

  int64_t q_size() const { return num_attention_heads * head_dim; }
  int64_t kv_size() const { return num_key_value_heads * head_dim; }
  // Whether sequences of `length` tokens need the window in their attention mask.
  bool window_limits(int64_t length) const { return sliding_window > 0 && sliding_window < length; }
  bool layers_differ() const { return !layer_types.empty(); }
  bool hybrid() const { return !token_mixers.empty(); }
  bool gated_delta_layer(int64_t layer) const {
    return hybrid() && token_mixers.at(static_cast<size_t>(layer)) == TokenMixer::gated_delta;
  }
  // The rotated dimensions of a head (even): transformers' int(head_dim * partial_rotary_factor).
  int64_t rotary_dim() const { return static_cast<int64_t>(static_cast<double>(head_dim) * partial_rotary_factor); }
  // Whether `layer` attends through the window (every layer of a windowed model whose layers are alike).
  bool sliding_layer(int64_t layer) const;
  // Whether `layer`'s MLP routes tokens to experts.
  bool sparse_layer(int64_t layer) const;
  int64_t sparse_layer_count() const;
  int64_t parameter_count() const;
  // What one token's forward multiplies by: a sparse layer's experts_per_token experts, not all.
  int64_t active_parameter_count() const;
};

// Parses config.json text; `source` (the file path) prefixes every error message.
ModelConfig parse_model_config(const nlohmann::json& json, const std::string& source);
// Reads <path> (a config.json file or a directory holding one). Throws ModelError.
// config.json's model_type as the checkpoint writes it: the image-text wrapper's for its language
// model (gemma3), else the family's.
std::string checkpoint_model_type(const ModelConfig& config);
// PEFT 0.21's default target modules for the checkpoint (kPeftDefaultTargets), nullptr where
// PEFT has none.
const char* peft_default_target_modules(const ModelConfig& config);

ModelConfig load_model_config(const std::string& path);
// Throws ModelError naming `path` for 4-bit weights, which a run trains on only as a QLoRA base.
void require_full_precision(const ModelConfig& config, const std::string& path);
// The transformers class that loads `config` ("LlamaForCausalLM", "LlamaForSequenceClassification", ...).
const char* hf_architecture(const ModelConfig& config);
// The config.json that transformers loads as that class.
nlohmann::json to_hf_config_json(const ModelConfig& config);

}  // namespace st

// ModelConfig: the shape and numerics of a Llama-family model, read from a Hugging Face
// config.json (transformers 4.x and 5.x spellings) or taken from a preset. Fields the model code
// does not implement (sliding window, soft-capping, other rope types) are refused, never ignored.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace st {

struct RopeScaling {
  enum class Type { none, linear, llama3 };
  Type type = Type::none;
  double factor = 1.0;                            // linear and llama3
  double low_freq_factor = 1.0;                   // llama3
  double high_freq_factor = 4.0;                  // llama3
  int64_t original_max_position_embeddings = 0;   // llama3
};

struct ModelConfig {
  std::string model_type = "llama";  // llama | qwen2
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;   // < num_attention_heads means grouped-query attention
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;             // Llama attention_bias, or Qwen2 (always)
  bool o_proj_bias = false;          // Llama attention_bias only
  bool mlp_bias = false;
  int64_t bos_token_id = -1;         // -1: none
  std::vector<int64_t> eos_token_ids;
  std::string torch_dtype = "bfloat16";  // float32 | bfloat16 | float16

  int64_t q_size() const { return num_attention_heads * head_dim; }
  int64_t kv_size() const { return num_key_value_heads * head_dim; }
  int64_t parameter_count() const;
};

// Parses config.json text; `source` (the file path) prefixes every error message.
ModelConfig parse_model_config(const nlohmann::json& json, const std::string& source);
// Reads <path> (a config.json file or a directory holding one). Throws ModelError.
ModelConfig load_model_config(const std::string& path);
// The config.json that transformers loads as LlamaForCausalLM / Qwen2ForCausalLM.
nlohmann::json to_hf_config_json(const ModelConfig& config);

}  // namespace st

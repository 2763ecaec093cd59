// The model families that share the Llama decoder, declared once: config.json's model_type word
// and, per family, what it changes in the decoder. config.json's reading, the export's config
// and the parameter table (through ModelConfig) follow the row. A family that reuses the
// decoder's math is its ModelType word and its row here (docs/architecture.md).
#pragma once

#include "util/enum_names.h"

namespace st {

// config.json's model_type.
enum class ModelType { llama, qwen2, mistral, qwen3 };
template <>
struct EnumNames<ModelType> {
  static constexpr NamedValue<ModelType> table[] = {
      {ModelType::llama, "llama"}, {ModelType::qwen2, "qwen2"}, {ModelType::mistral, "mistral"},
      {ModelType::qwen3, "qwen3"}};
};

enum class Window { none, every_layer, per_layer };  // per_layer: Qwen's use_sliding_window (refused)
enum class Biases { none, qkv, from_attention_bias };  // qkv: Qwen2's q/k/v biases; else attention_bias
struct FamilySpec {
  ModelType type;
  const char* architecture;         // config.json "architectures" of an export
  const char* reward_architecture;  // the same with a reward model's score head (ModelHead::score)
  Window window;
  Biases biases;
  bool qk_norm;  // q and k RMS-normed per head before rotary
};
inline constexpr FamilySpec kFamilies[] = {
    {ModelType::llama, "LlamaForCausalLM", "LlamaForSequenceClassification", Window::none, Biases::from_attention_bias,
     false},
    {ModelType::qwen2, "Qwen2ForCausalLM", "Qwen2ForSequenceClassification", Window::per_layer, Biases::qkv, false},
    {ModelType::mistral, "MistralForCausalLM", "MistralForSequenceClassification", Window::every_layer, Biases::none,
     false},
    {ModelType::qwen3, "Qwen3ForCausalLM", "Qwen3ForSequenceClassification", Window::per_layer,
     Biases::from_attention_bias, true}};

// The row of `type`; throws ModelError for a word without one.
const FamilySpec& family_of(ModelType type);

}  // namespace st

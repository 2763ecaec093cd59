// The model families that share the Llama decoder, declared once: config.json's model_type word
// and, per family, what it changes in the decoder. config.json's reading, the export's config
// and the parameter table (through ModelConfig) follow the row. A family that reuses the
// decoder's math is its ModelType word and its row here (docs/architecture.md).
#pragma once

#include "util/enum_names.h"

namespace st {

// config.json's model_type.
enum class ModelType { llama, qwen2, mistral, qwen3, qwen3_moe, mixtral };
template <>
struct EnumNames<ModelType> {
  static constexpr NamedValue<ModelType> table[] = {
      {ModelType::llama, "llama"},         {ModelType::qwen2, "qwen2"},         {ModelType::mistral, "mistral"},
      {ModelType::qwen3, "qwen3"},         {ModelType::qwen3_moe, "qwen3_moe"}, {ModelType::mixtral, "mixtral"}};
};

enum class Window { none, every_layer, per_layer };  // per_layer: Qwen's use_sliding_window (refused)
enum class Biases { none, qkv, from_attention_bias };  // qkv: Qwen2's q/k/v biases; else attention_bias
// Whether the MLP routes tokens to experts (model/moe_block.h), and how the checkpoint names them:
// qwen_moe: mlp.gate, mlp.experts.<e>.{gate,up,down}_proj, renormalising the top-k weights per
// norm_topk_prob; mixtral: block_sparse_moe.gate, block_sparse_moe.experts.<e>.{w1,w3,w2}, always
// renormalising. Every layer of a family with experts is sparse but those config.json keeps dense.
enum class Experts { none, qwen_moe, mixtral };
struct FamilySpec {
  ModelType type;
  const char* architecture;         // config.json "architectures" of an export
  const char* reward_architecture;  // the same with a reward model's score head (ModelHead::score)
  Window window;
  Biases biases;
  bool qk_norm;  // q and k RMS-normed per head before rotary
  Experts experts;
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
     false, Experts::mixtral}};

// Neighbouring model types refused by name, with what they would need (config.json's model_type).
struct RefusedType {
  const char* model_type;
  const char* why;
};
inline constexpr RefusedType kRefusedTypes[] = {
    {"qwen2_moe", "its shared expert (shared_expert with a sigmoid shared_expert_gate beside the routed ones) is not "
                  "built"},
    {"gpt_oss", "its router has a bias and its experts interleave gate and up with clamped activations; not built"},
    {"deepseek_v2", "its grouped top-k router and multi-head latent attention (MLA) are not built"},
    {"deepseek_v3", "its grouped top-k router and multi-head latent attention (MLA) are not built"},
    {"llama4", "its shared expert, sigmoid router and chunked attention are not built"},
    {"llama4_text", "its shared expert, sigmoid router and chunked attention are not built"}};

// The row of `type`; throws ModelError for a word without one.
const FamilySpec& family_of(ModelType type);

}  // namespace st

// The parameters of a Llama-family model under their Hugging Face names, in state_dict order,
// grouped into the units the FSDP engine shards: embedding, one per decoder layer, and the head
// (final norm + lm_head; with tied embeddings the head has no lm_head of its own).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace st {

struct ParamSpec {
  // How a preset initialises it (HF's _init_weights); lora_a: PEFT's kaiming-uniform A.
  enum class Init { normal, ones, zeros, lora_a };
  std::string name;
  std::vector<int64_t> shape;
  Init init = Init::normal;

  int64_t numel() const;
};

std::vector<ParamSpec> embedding_params(const ModelConfig& config);
std::vector<ParamSpec> layer_params(const ModelConfig& config, int64_t layer);
std::vector<ParamSpec> head_params(const ModelConfig& config);
std::vector<ParamSpec> all_params(const ModelConfig& config);

std::string layer_prefix(int64_t layer);  // "model.layers.<layer>."
inline const char* kEmbedName = "model.embed_tokens.weight";
inline const char* kFinalNormName = "model.norm.weight";
inline const char* kLmHeadName = "lm_head.weight";

}  // namespace st

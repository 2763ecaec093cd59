// Where a model's config and weights come from: a Hugging Face directory or a preset with
// seeded random weights. Whole-model (every tensor on this process); FSDP loads shards instead.
// A bitsandbytes 4-bit checkpoint's NF4 weights are dequantized (model/stored_nf4.h): score,
// generate and eval run it as bitsandbytes' dequantize_4bit defines its weights.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include "hf/model_config.h"
#include "hf/param_table.h"

namespace st {

struct LoadedModel {
  ModelConfig config;
  TensorMap tensors;
  std::string description;  // for logs: the directory or "preset <name> (seed s)"
  std::string directory;    // the Hugging Face directory the model came from (its tokenizer's); "" for a preset
};

// `path` non-empty: config.json + safetensors there; else the preset. Throws ModelError.
LoadedModel load_model(const std::string& path, const std::string& preset, uint64_t seed,
                       const at::TensorOptions& options);

}  // namespace st

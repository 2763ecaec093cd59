// A model checkpoint in the layouts users have, read under the parameter table's names. A
// mixture-of-experts model's: one tensor per expert, as the models ship and as shardtune exports,
// or the stacked tensors transformers 5 holds, `<layer>.mlp.experts.gate_up_proj` [E, 2I, D] and
// `<layer>.mlp.experts.down_proj` [E, D, I] (and Mixtral's router as `<layer>.mlp.gate.weight`).
// An image-text checkpoint's language model (ModelConfig::multimodal_text): its tensors under
// `language_model.model.` (transformers 4) or `model.language_model.` (5). Both are read as views
// under the table's names, so every loader reads every layout, each rank only its own shard's bytes.
#pragma once

#include <string>

#include "hf/model_config.h"
#include "hf/safetensors_checkpoint.h"

namespace st {

// The checkpoint at `path` with the views a stacked layout needs for `config`. Throws ModelError
// naming the file and tensor when a stacked tensor's shape does not follow from config.json.
SafetensorsCheckpoint open_model_checkpoint(const std::string& path, const ModelConfig& config);

}  // namespace st

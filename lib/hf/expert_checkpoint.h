// A model checkpoint in the layouts users have, read under the parameter table's names. A
// mixture-of-experts model's: one tensor per expert, as the models ship and as shardtune exports,
// or the stacked tensors transformers 5 holds, `<layer>.mlp.experts.gate_up_proj` [E, 2I, D] and
// `<layer>.mlp.experts.down_proj` [E, D, I] (and Mixtral's router as `<layer>.mlp.gate.weight`).
// An image-text checkpoint's language model (ModelConfig::multimodal_text): its tensors under
// `language_model.model.` (transformers 4) or `model.language_model.` (5). Both are read as views
// under the table's names, so every loader reads every layout, each rank only its own shard's bytes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hf/model_config.h"
#include "hf/safetensors_checkpoint.h"
#include "hf/safetensors_writer.h"

namespace st {

// An image-text checkpoint whose exports keep its layout (MultimodalWrapper::export_keeps_layout):
// the prefixes its language model's tensors sit under and the tensors beside them, which an export
// copies as stored.
struct WrapperLayout {
  std::string text_prefix;          // "model.language_model." (transformers 5) or "language_model.model." (4)
  std::string head_prefix;          // "lm_head." or "language_model.lm_head."
  std::vector<TensorSpec> copied;   // every other stored tensor (vision tower, mtp.*) as stored, by name
  // "model.layers.0.x" -> its name in the checkpoint ("model.language_model.layers.0.x").
  std::string wrapped_name(const std::string& text_name) const;
};
// The layout of the model directory `directory` when its config.json is such a wrapper's;
// nullopt otherwise (a text model, or a wrapper whose exports are the text model alone).
std::optional<WrapperLayout> wrapper_layout(const std::string& directory);

// The checkpoint at `path` with the views a stacked layout needs for `config`. Throws ModelError
// naming the file and tensor when a stacked tensor's shape does not follow from config.json.
SafetensorsCheckpoint open_model_checkpoint(const std::string& path, const ModelConfig& config);

}  // namespace st

// A mixture-of-experts checkpoint in either layout users have: one tensor per expert, as the
// models ship and as shardtune exports (the parameter table's names), or the stacked tensors
// transformers 5 holds, `<layer>.mlp.experts.gate_up_proj` [E, 2I, D] and
// `<layer>.mlp.experts.down_proj` [E, D, I] (and Mixtral's router as `<layer>.mlp.gate.weight`).
// The stacked ones are read as views under the per-expert names, so every loader reads both, each
// rank only the bytes of its own shard.
#pragma once

#include <string>

#include "hf/model_config.h"
#include "hf/safetensors_checkpoint.h"

namespace st {

// The checkpoint at `path` with the views a stacked layout needs for `config`. Throws ModelError
// naming the file and tensor when a stacked tensor's shape does not follow from config.json.
SafetensorsCheckpoint open_model_checkpoint(const std::string& path, const ModelConfig& config);

}  // namespace st

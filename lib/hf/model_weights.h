// Whole-model parameters for single-process use (score, tests): read from a Hugging Face
// checkpoint with names and shapes checked against config.json, or initialised from a preset
// with a seed per parameter (so values do not depend on how many ranks create them).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "hf/model_config.h"
#include "hf/param_table.h"
#include "hf/safetensors_checkpoint.h"

namespace st {

// Throws ModelError naming the file and tensor for a missing tensor or a shape that does not
// follow from config.json.
TensorMap load_hf_weights(const SafetensorsCheckpoint& checkpoint, const ModelConfig& config,
                          const at::TensorOptions& options);

// Checks one tensor's presence and shape against its spec (used by sharded loaders too).
void check_param_against_config(const SafetensorsCheckpoint& checkpoint, const ParamSpec& spec);

// fp32 on CPU: N(0, 0.02) for matrices, ones for norms, zeros for biases (HF's init).
at::Tensor init_parameter(const ParamSpec& spec, uint64_t seed);
TensorMap init_preset_weights(const ModelConfig& config, uint64_t seed,
                              const at::TensorOptions& options);

}  // namespace st

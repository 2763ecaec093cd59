// config.json's part of a hybrid (FamilySpec::mixers = Mixers::gated_delta_hybrid): each layer's
// token mixer, the Gated DeltaNet layers' sizes, the attention's output gate and the partial
// rotary factor. Read by parse_model_config, written back by to_hf_config_json.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>

#include "hf/config_reader.h"
#include "hf/model_config.h"

namespace st {

// layer_types (one of full_attention, linear_attention per layer), else every
// full_attention_interval-th layer full (transformers' rule); linear_num_key_heads,
// linear_num_value_heads (a multiple of the key heads), linear_key_head_dim,
// linear_value_head_dim, linear_conv_kernel_dim; rope_parameters.partial_rotary_factor (or the
// top-level key). Throws ModelError naming the field.
void parse_hybrid_layers(const ConfigReader& reader, ModelConfig& config);

// The same keys as transformers writes them, into `out`.
void write_hybrid_layers(const ModelConfig& config, nlohmann::json& out);

// One Gated DeltaNet layer's token-mixer parameters (linear_attn.*).
int64_t gated_delta_mixer_parameters(const ModelConfig& config);

}  // namespace st

#include "hf/gated_delta_config.h"

#include <nlohmann/json.hpp>

#include <string>

namespace st {

using nlohmann::json;

namespace {

void parse_mixers(const ConfigReader& reader, ModelConfig& config) {
  const auto layers = static_cast<size_t>(config.num_hidden_layers);
  config.token_mixers.clear();
  if (reader.has("layer_types")) {
    config.token_mixers = reader.per_layer<TokenMixer>("layer_types", layers);
    return;
  }
  const int64_t interval = reader.positive_or("full_attention_interval", 4);
  for (size_t layer = 0; layer < layers; ++layer) {
    config.token_mixers.push_back((static_cast<int64_t>(layer) + 1) % interval != 0 ? TokenMixer::gated_delta
                                                                                   : TokenMixer::attention);
  }
}

double parse_partial_rotary(const ConfigReader& reader) {
  const json& root = reader.root();
  if (reader.has("rope_parameters") && reader.has(root.at("rope_parameters"), "partial_rotary_factor")) {
    return reader.number(root.at("rope_parameters"), "partial_rotary_factor", "rope_parameters.partial_rotary_factor");
  }
  return reader.number_or("partial_rotary_factor", 1.0);
}

}  // namespace

void parse_hybrid_layers(const ConfigReader& reader, ModelConfig& config) {
  parse_mixers(reader, config);
  LinearAttentionShape& shape = config.linear_attention;
  shape.key_heads = reader.positive("linear_num_key_heads");
  shape.value_heads = reader.positive("linear_num_value_heads");
  shape.key_head_dim = reader.positive("linear_key_head_dim");
  shape.value_head_dim = reader.positive("linear_value_head_dim");
  shape.conv_kernel = reader.positive("linear_conv_kernel_dim");
  if (shape.value_heads % shape.key_heads != 0) {
    reader.fail("linear_num_value_heads", "= " + std::to_string(shape.value_heads) +
                                              " must be a multiple of linear_num_key_heads = " +
                                              std::to_string(shape.key_heads));
  }
  if (config.rope_scaling.type != RopeScaling::Type::none) {
    reader.fail("rope_parameters.rope_type", "scales the rotary frequencies; a hybrid's rotary here is the default one");
  }
  config.attention_output_gate = family_of(config.model_type).attention_output_gate;
  // The multimodal rotary sections (mrope_section) reduce to one dimension for text: every
  // section's position is the token's, so the frequencies are the plain ones over rotary_dim.
  config.partial_rotary_factor = parse_partial_rotary(reader);
  const int64_t rotary = config.rotary_dim();
  if (config.partial_rotary_factor <= 0 || config.partial_rotary_factor > 1 || rotary < 2 || rotary % 2 != 0) {
    reader.fail("rope_parameters.partial_rotary_factor",
                "= " + std::to_string(config.partial_rotary_factor) + " must rotate an even number of the head_dim " +
                    std::to_string(config.head_dim) + " dimensions (0 < factor <= 1)");
  }
}

void write_hybrid_layers(const ModelConfig& config, json& out) {
  out["layer_types"] = json::array();
  for (TokenMixer mixer : config.token_mixers) out["layer_types"].push_back(enum_name(mixer));
  const LinearAttentionShape& shape = config.linear_attention;
  out["linear_num_key_heads"] = shape.key_heads;
  out["linear_num_value_heads"] = shape.value_heads;
  out["linear_key_head_dim"] = shape.key_head_dim;
  out["linear_value_head_dim"] = shape.value_head_dim;
  out["linear_conv_kernel_dim"] = shape.conv_kernel;
  // transformers 5 reads the partial rotary factor from rope_parameters only.
  out.erase("rope_scaling");
  out.erase("rope_theta");
  out["rope_parameters"] = {{"rope_type", "default"},
                            {"rope_theta", config.rope_theta},
                            {"partial_rotary_factor", config.partial_rotary_factor}};
}

int64_t gated_delta_mixer_parameters(const ModelConfig& config) {
  const LinearAttentionShape& s = config.linear_attention;
  const int64_t hidden = config.hidden_size;
  return hidden * (s.conv_channels() + s.value_dim() + 2 * s.value_heads)  // in_proj_qkv, z, b, a
         + s.conv_channels() * s.conv_kernel + 2 * s.value_heads + s.value_head_dim  // conv1d, dt_bias, A_log, norm
         + s.value_dim() * hidden;                                                   // out_proj
}

}  // namespace st

#include "hf/expert_checkpoint.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "hf/param_table.h"
#include "hf/safetensors_dtype.h"
#include "hf/shape_text.h"
#include "util/errors.h"
#include "util/text.h"

namespace st {
namespace {

// The stored tensor `name` must be `shape`.
void require_shape(const SafetensorsCheckpoint& checkpoint, const std::string& name, const std::vector<int64_t>& shape) {
  const SafetensorsEntry& entry = checkpoint.entry(name);
  if (entry.shape != shape) {
    throw ModelError(checkpoint.file_of(name)->path() + ": tensor '" + name + "' has shape " + shape_text(entry.shape) +
                     ", config.json implies " + shape_text(shape) +
                     " (num_experts, 2 x moe_intermediate_size or hidden_size); the checkpoint does not match its config");
  }
}

void add_layer_views(SafetensorsCheckpoint& checkpoint, const ModelConfig& config, int64_t layer) {
  const std::string stacked = layer_prefix(layer) + "mlp.";
  const int64_t experts = config.experts.num_experts, width = config.experts.expert_intermediate_size;
  const int64_t hidden = config.hidden_size;
  const std::string router = expert_param_name(config, layer, LayerParam::router, -1);
  if (checkpoint.file_of(router) == nullptr && checkpoint.file_of(stacked + "gate.weight") != nullptr) {
    checkpoint.add_view(router, stacked + "gate.weight", 0, {experts, hidden});
  }
  const std::string gate_up = stacked + "experts.gate_up_proj", down = stacked + "experts.down_proj";
  if (checkpoint.file_of(expert_param_name(config, layer, LayerParam::expert_gate, 0)) != nullptr ||
      checkpoint.file_of(gate_up) == nullptr) {
    return;  // per-expert tensors, or neither (the loaders name what is missing)
  }
  require_shape(checkpoint, gate_up, {experts, 2 * width, hidden});
  require_shape(checkpoint, down, {experts, hidden, width});
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t block = e * 2 * width * hidden;  // expert e's [2I, D]: gate's rows, then up's
    checkpoint.add_view(expert_param_name(config, layer, LayerParam::expert_gate, e), gate_up, block, {width, hidden});
    checkpoint.add_view(expert_param_name(config, layer, LayerParam::expert_up, e), gate_up, block + width * hidden,
                        {width, hidden});
    checkpoint.add_view(expert_param_name(config, layer, LayerParam::expert_down, e), down, e * hidden * width,
                        {hidden, width});
  }
}

}  // namespace

// An image-text checkpoint's language model under the text model's names; the vision tower and
// projector stay unread.
void add_language_model_views(SafetensorsCheckpoint& checkpoint) {
  static const std::pair<std::string, std::string> kPrefixes[] = {{"language_model.model.", "model."},
                                                                  {"model.language_model.", "model."},
                                                                  {"language_model.lm_head.", "lm_head."}};
  for (const std::string& stored : checkpoint.names()) {
    for (const auto& [prefix, text_prefix] : kPrefixes) {
      if (!starts_with(stored, prefix)) continue;
      checkpoint.add_view(text_prefix + stored.substr(prefix.size()), stored, 0, checkpoint.entry(stored).shape);
    }
  }
}

std::string WrapperLayout::wrapped_name(const std::string& text_name) const {
  if (starts_with(text_name, "model.")) return text_prefix + text_name.substr(6);
  if (starts_with(text_name, "lm_head.")) return head_prefix + text_name.substr(8);
  return text_name;
}

std::optional<WrapperLayout> wrapper_layout(const std::string& directory) {
  const std::filesystem::path config_path = std::filesystem::path(directory) / "config.json";
  if (directory.empty() || !std::filesystem::exists(config_path)) return std::nullopt;
  std::ifstream in(config_path);
  const nlohmann::json config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object() || !config.contains("model_type") || !config.at("model_type").is_string()) return std::nullopt;
  const MultimodalWrapper* wrapper = multimodal_wrapper(config.at("model_type").get<std::string>());
  if (wrapper == nullptr || !wrapper->export_keeps_layout) return std::nullopt;
  const SafetensorsCheckpoint checkpoint(directory);
  WrapperLayout layout{"model.language_model.", "lm_head.", {}};
  for (const std::string& name : checkpoint.names()) {
    if (starts_with(name, "language_model.model.")) layout = {"language_model.model.", "language_model.lm_head.", {}};
  }
  for (const std::string& name : checkpoint.names()) {
    if (starts_with(name, layout.text_prefix) || starts_with(name, layout.head_prefix)) continue;
    const SafetensorsEntry& entry = checkpoint.entry(name);
    layout.copied.push_back({name, scalar_type(entry.dtype), entry.shape});
  }
  return layout;
}

SafetensorsCheckpoint open_model_checkpoint(const std::string& path, const ModelConfig& config) {
  SafetensorsCheckpoint checkpoint(path);
  if (config.multimodal_text) add_language_model_views(checkpoint);
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    if (config.sparse_layer(layer)) add_layer_views(checkpoint, config, layer);
  }
  return checkpoint;
}

}  // namespace st

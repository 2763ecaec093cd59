#include "hf/model_source.h"

#include "hf/model_weights.h"
#include "hf/presets.h"
#include "hf/safetensors_checkpoint.h"

namespace st {

LoadedModel load_model(const std::string& path, const std::string& preset, uint64_t seed,
                       const at::TensorOptions& options) {
  LoadedModel model;
  if (!path.empty()) {
    model.config = load_model_config(path);
    require_full_precision(model.config, path);  // score, generate, eval: no 4-bit forward
    model.tensors = load_hf_weights(SafetensorsCheckpoint(path), model.config, options);
    model.description = path;
    model.directory = path;
  } else {
    model.config = preset_config(preset);
    model.tensors = init_preset_weights(model.config, seed, options);
    model.description = "preset " + preset + " (seed " + std::to_string(seed) + ")";
  }
  return model;
}

}  // namespace st

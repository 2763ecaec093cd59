#include "model/model_source.h"

#include "hf/expert_checkpoint.h"
#include "hf/model_weights.h"
#include "hf/presets.h"
#include "hf/safetensors_checkpoint.h"
#include "model/stored_nf4.h"

namespace st {

LoadedModel load_model(const std::string& path, const std::string& preset, uint64_t seed,
                       const at::TensorOptions& options) {
  LoadedModel model;
  if (!path.empty()) {
    model.config = load_model_config(path);
    const SafetensorsCheckpoint checkpoint = open_model_checkpoint(path, model.config);
    if (model.config.weight_storage == WeightStorage::bnb_nf4) {
      // A bitsandbytes 4-bit checkpoint: its NF4 weights dequantized as bitsandbytes does.
      for (const ParamSpec& spec : all_params(model.config)) {
        const bool nf4 = stored_in_nf4(checkpoint, spec.name);
        if (!nf4) check_param_against_config(checkpoint, spec);
        const at::Tensor values = nf4 ? StoredNf4Weight(checkpoint, spec).dequantized() : checkpoint.read(spec.name);
        model.tensors[spec.name] = values.to(options);
      }
    } else {
      model.tensors = load_hf_weights(checkpoint, model.config, options);
    }
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

// config.json -> ModelConfig, then what is derived from it (parameter count, the config.json
// written back on export).
#include "fuzz_target.h"
#include "hf/model_config.h"

#include <nlohmann/json.hpp>

ST_FUZZ_TARGET(model_config) {
  const std::string path = st::fuzz::scratch_file("config.json", data, size);
  return st::fuzz::refusal([&] {
    const st::ModelConfig config = st::load_model_config(path);
    (void)config.parameter_count();
    (void)st::to_hf_config_json(config).dump();
  });
}

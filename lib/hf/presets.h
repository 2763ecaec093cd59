// Built-in model shapes as data: `debug` (tiny, for tests and the demo) and the shapes of public
// Llama checkpoints (for estimate and benchmarks, with seeded random weights).
#pragma once

#include <string>
#include <vector>

#include "hf/model_config.h"

namespace st {

const std::vector<std::string>& preset_names();
// Throws ModelError naming the known presets when `name` is not one of them.
ModelConfig preset_config(const std::string& name);

}  // namespace st

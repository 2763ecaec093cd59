// [model] section: which model to fine-tune. Lives here because lib/model consumes it.
#pragma once

#include <string>

namespace st {

struct ModelOptions {
  std::string path;              // HF model directory (config.json + *.safetensors); empty = preset
  std::string preset = "debug";  // built-in shape with seeded random init, used when path is empty
};

}  // namespace st

// [model] section: which model to fine-tune. Lives here because lib/model consumes it.
#pragma once

#include <cstdint>
#include <string>

namespace st {

struct ModelOptions {
  std::string path;              // HF model directory (config.json + *.safetensors); empty = preset
  std::string preset = "debug";  // built-in shape with seeded random init, used when path is empty
  int64_t logp_chunk_tokens = 1024;  // tokens per lm_head log-prob chunk (memory ~ chunk x vocab x 4 B)
};

}  // namespace st

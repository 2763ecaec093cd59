// Shared by the unit and cuda tiers' NF4 tests: a debug-sized Llama whose projection weights
// end mid-block (k/v projections of 800 elements, MLP ones of 2080), so every layout and kernel
// meets partial last blocks.
#pragma once

#include "hf/presets.h"

namespace st::testing {

inline ModelConfig odd_quantized_config() {
  ModelConfig config = preset_config("debug");
  config.vocab_size = 97;
  config.hidden_size = 40;
  config.intermediate_size = 52;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.head_dim = 10;
  return config;
}

}  // namespace st::testing

// [model] section: which model to fine-tune. Lives here because lib/model consumes it.
#pragma once

#include <cstdint>
#include <string>

#include "util/enum_names.h"

namespace st {

// How packed, prompt-shared and windowed rows attend: varlen = each sequence alone through
// cumulative offsets (attention_spans.h; flash varlen on a GPU), masked = one [T, T] mask per
// row (the oracle the tests compare with, and the baseline of bench/packing.sh).
enum class AttentionPath { varlen, masked };
template <>
struct EnumNames<AttentionPath> {
  static constexpr NamedValue<AttentionPath> table[] = {{AttentionPath::varlen, "varlen"},
                                                        {AttentionPath::masked, "masked"}};
};

struct ModelOptions {
  std::string path;              // HF model directory (config.json + *.safetensors); empty = preset
  std::string preset = "debug";  // built-in shape with seeded random init, used when path is empty
  int64_t logp_chunk_tokens = 1024;  // tokens per lm_head log-prob chunk (memory ~ chunk x vocab x 4 B)
  AttentionPath attention = AttentionPath::varlen;  // packed / shared / windowed rows
};

}  // namespace st

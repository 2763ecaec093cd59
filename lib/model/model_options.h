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
  // The keys of [model]: their help, unit and range are declared once, in train/train_config_schema.cpp.
  std::string path;
  std::string preset = "debug";
  int64_t logp_chunk_tokens = 1024;
  AttentionPath attention = AttentionPath::varlen;
};

}  // namespace st

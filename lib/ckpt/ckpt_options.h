// [ckpt] section: when sharded checkpoints are written, how many are kept, and the consolidated
// Hugging Face export at the end of training. Lives here because lib/ckpt consumes it.
#pragma once

#include <cstdint>
#include <string>

#include "util/enum_names.h"

namespace st {

// ckpt.export_dtype and `shardtune export --dtype`: the exported weights' dtype.
enum class ExportDtype { bf16, fp32 };
template <>
struct EnumNames<ExportDtype> {
  static constexpr NamedValue<ExportDtype> table[] = {{ExportDtype::bf16, "bf16"}, {ExportDtype::fp32, "fp32"}};
};

struct CkptOptions {
  // The keys of [ckpt]: their help, unit and range are declared once, in train/train_config_schema.cpp.
  std::string dir;
  int64_t every = 0;
  int64_t keep_last = 0;
  bool async = false;
  bool export_hf = false;
  ExportDtype export_dtype = ExportDtype::bf16;
  double export_shard_gb = 5.0;
};

}  // namespace st

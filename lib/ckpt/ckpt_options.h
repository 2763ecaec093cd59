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
  std::string dir;             // checkpoint directory; empty = <train.output_dir>/checkpoints
  int64_t every = 0;           // optimizer steps between checkpoints; 0 = only at the end
  int64_t keep_last = 0;       // complete checkpoints kept; 0 = all (the newest is never deleted)
  bool async = false;          // write on a background thread from a host snapshot
  bool export_hf = false;      // consolidated HF model in <train.output_dir>/export at the end
  ExportDtype export_dtype = ExportDtype::bf16;  // bf16 | fp32
  double export_shard_gb = 5.0;       // safetensors file size limit [GB, 10^9 bytes]
};

}  // namespace st

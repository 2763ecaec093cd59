// [ckpt] section: when sharded checkpoints are written, how many are kept, and the consolidated
// Hugging Face export at the end of training. Lives here because lib/ckpt consumes it.
#pragma once

#include <cstdint>
#include <string>

namespace st {

struct CkptOptions {
  std::string dir;             // checkpoint directory; empty = <train.output_dir>/checkpoints
  int64_t every = 0;           // optimizer steps between checkpoints; 0 = only at the end
  int64_t keep_last = 0;       // complete checkpoints kept; 0 = all (the newest is never deleted)
  bool async = false;          // write on a background thread from a host snapshot
  bool export_hf = false;      // consolidated HF model in <train.output_dir>/export at the end
  std::string export_dtype = "bf16";  // bf16 | fp32
  double export_shard_gb = 5.0;       // safetensors file size limit [GB, 10^9 bytes]
  bool save_at_end = true;     // not a config key: `shardtune bench` runs keep no state
};

}  // namespace st

// manifest.json of a sharded checkpoint (step_XXXXXXXX/): the format version, where training
// stood (step, sampler cursor, optimizer and loss-scaler state), the model it belongs to (its
// config.json and unit geometry), the run's resolved config, the git sha, and one entry per
// rank file with its size and CRC-32. Rank files hold the tensors (rank_file.h).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "data/sampler.h"
#include "optim/loss_scaler.h"
#include "optim/optim_options.h"

namespace st {

inline constexpr int kCheckpointFormatVersion = 1;

// Where training stood after `step` optimizer steps: everything besides the tensors that a
// resumed run needs to continue as if it had never stopped.
struct TrainProgress {
  int64_t step = 0;              // optimizer steps completed
  int64_t total_steps = 0;       // of the run (the LR schedule's length)
  int64_t global_batch = 0;      // pairs per step; the sampler cursor counts in these; 0 = not recorded
  SamplerCursor cursor;          // the next unseen training sample
  int64_t optimizer_steps = 0;   // AdamW bias-correction count (fp16-skipped steps excluded)
  LossScalerState scaler;
};

struct CheckpointUnit {
  std::string name;  // "embedding", "layer.<i>", "head"
  int64_t numel = 0;
};

struct CheckpointFile {
  std::string name;  // rank_XXXXX.h5, one per shard of the group that wrote it
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
};

struct CheckpointManifest {
  int format_version = kCheckpointFormatVersion;
  TrainProgress progress;
  int world_size = 0;               // ranks of the job that wrote it
  OptimizerName optimizer = OptimizerName::adamw;  // which moments the rank files hold (absent: adamw)
  std::vector<CheckpointUnit> units;
  nlohmann::json model_config;      // config.json of the model (to_hf_config_json)
  std::string model_source;         // model.path, or the preset description
  std::string config;               // the run's resolved INI
  std::string git_sha;
  // Adapter runs (units hold adapters only): {"method", "base_fingerprint", the adapters' shape};
  // null for a run that trains every weight.
  nlohmann::json adapter;
  std::vector<CheckpointFile> files;  // file i holds shard i of every unit

  int shard_count() const { return static_cast<int>(files.size()); }
};

inline constexpr const char* kCheckpointManifestName = "manifest.json";

std::string format_checkpoint_manifest(const CheckpointManifest& manifest);
// Throws CheckpointError naming the file and the field; refuses other format versions.
CheckpointManifest read_checkpoint_manifest(const std::string& directory);

}  // namespace st

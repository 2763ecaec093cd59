// Saving sharded checkpoints (layout: ../../docs/checkpoints.md). Every shard's writer (the
// first replica of it) writes rank_XXXXX.h5 into step_X.tmp/ and fsyncs it; once every rank's
// write is done, rank 0 writes manifest.json (with each file's size and CRC-32) and COMPLETE,
// renames the directory to step_X, points `latest` at it and applies retention. A crash at any
// point leaves the earlier checkpoints complete and a .tmp that the next start removes.
// Async: the shards are copied to host memory and written on a background thread while
// training goes on; at most one save is in flight, and its errors surface at the next poll().
#pragma once

#include <nlohmann/json.hpp>

#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ckpt/checkpoint_manifest.h"
#include "ckpt/ckpt_options.h"
#include "ckpt/rank_file.h"
#include "distributed/communicator.h"
#include "fsdp/unit_layout.h"

namespace st {

// What identifies the run a checkpoint belongs to, besides its tensors.
struct CheckpointIdentity {
  nlohmann::json model_config;    // to_hf_config_json of the model
  std::string model_source;       // model.path or the preset description
  std::vector<UnitLayout> units;  // this run's geometry
  std::string config;             // the resolved INI
  nlohmann::json adapter = nullptr;  // adapter runs: the adapters and the base they adapt; null otherwise
  OptimizerName optimizer = OptimizerName::adamw;  // which moments the state holds
};

// This rank's place in the sharding: which shard it holds and whether it writes it (replicas
// of a shard, under hybrid or no sharding, hold the same values; the first one writes).
struct ShardPlace {
  int shard = 0;
  int shard_count = 1;
  bool writes = true;
};

class CheckpointWriter {
 public:
  CheckpointWriter(std::string directory, const CkptOptions& options, CheckpointIdentity identity,
                   Communicator& world, ShardPlace place);
  ~CheckpointWriter();  // waits for a write still running (its checkpoint stays uncommitted)

  // Collective over `world`. `state` may live on the device; it is copied (async) or read in
  // place (sync) before this returns (async) or the checkpoint is complete (sync). A save in
  // flight is finished first.
  void save(const TrainProgress& progress, const ShardState& state, const RngState& rng);
  // Collective, once per step while in_flight(): commits the async save when every rank's write
  // has finished; rethrows this rank's write error.
  void poll();
  // Collective: waits for and commits the save in flight, if any.
  void finish();
  bool in_flight() const { return pending_ != nullptr; }
  int64_t last_committed_step() const { return last_committed_; }

 private:
  struct Pending;
  void commit();  // collective

  std::string directory_;
  CkptOptions options_;
  CheckpointIdentity identity_;
  Communicator& world_;
  ShardPlace place_;
  std::unique_ptr<Pending> pending_;
  int64_t last_committed_ = -1;
};

}  // namespace st

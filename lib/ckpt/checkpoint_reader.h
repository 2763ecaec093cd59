// Reading a sharded checkpoint back, for the same or another number of shards: a rank computes
// its element range of every unit in the new geometry and reads the overlapping pieces of the
// old rank files (rank file s holds [s * S_old, (s + 1) * S_old) of each unit). Every file's size
// and CRC-32 is checked first, the files spread over the ranks; a bad one is named.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "ckpt/checkpoint_manifest.h"
#include "ckpt/rank_file.h"
#include "dist/communicator.h"
#include "fsdp/unit_layout.h"

namespace st {

struct LoadedCheckpoint {
  CheckpointManifest manifest;
  ShardState state;  // fp32 host [shard_numel] per unit of the new geometry (moments empty if not read)
  RngState rng;      // this shard's, when the shard count is unchanged; else empty
};

// Throws CheckpointError unless the checkpoint was written for this model: the same config.json
// fields and the same units.
void check_checkpoint_model(const CheckpointManifest& manifest, const std::string& directory,
                            const nlohmann::json& model_config, const std::vector<UnitLayout>& units);

// Collective over `world`: verifies the files, then reads shard `shard` of `units` (laid out for
// the new shard count). `with_moments` false reads the master weights only (export).
LoadedCheckpoint load_checkpoint(const std::string& directory, const std::vector<UnitLayout>& units, int shard,
                                 Communicator& world, bool with_moments);

}  // namespace st

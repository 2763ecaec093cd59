// Reading a sharded checkpoint back, for the same or another number of shards: a rank computes
// its element range of every unit in the new geometry and reads the overlapping pieces of the
// old rank files (rank file s holds [s * S_old, (s + 1) * S_old) of each unit). Every file's size
// and CRC-32 is checked first, the files spread over the ranks; a bad one is named. The state is
// read into tensors the caller owns (the engine's own, when resuming), so a load allocates and
// copies nothing beyond one unit's staging buffer for device tensors.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "ckpt/checkpoint_manifest.h"
#include "ckpt/rank_file.h"
#include "distributed/communicator.h"
#include "fsdp/unit_layout.h"

namespace st {

struct LoadedCheckpoint {
  CheckpointManifest manifest;
  RngState rng;  // this shard's, when the shard count is unchanged; else empty
};

// The stored values of `kind` that shard `shard` of `unit` holds: [first, first + count). With
// a stride (absmax per 256 elements), every block the shard overlaps, also one it shares with
// the next shard in a geometry not aligned to blocks (an 8-bit checkpoint read for adamw).
struct StoredRange {
  int64_t first = 0, count = 0;
};
StoredRange stored_range(const UnitLayout& unit, int shard, StateKind kind);

// Fresh host tensors of shard `shard`, one per unit: masters, plus the moments `optimizer`
// keeps if `with_moments` (sized by stored_range).
ShardState host_shard_state(const std::vector<UnitLayout>& units, bool with_moments,
                            OptimizerName optimizer = OptimizerName::adamw, int shard = 0);

// Throws CheckpointError unless the checkpoint was written for this model: the same config.json
// fields and the same units, and for an adapter run the same adapters on the same base
// (`adapter` as CheckpointIdentity holds it; null for a run that trains every weight).
void check_checkpoint_model(const CheckpointManifest& manifest, const std::string& directory,
                            const nlohmann::json& model_config, const std::vector<UnitLayout>& units,
                            const nlohmann::json& adapter = nullptr);

// Collective over `world`: verifies the files, then reads shard `shard` of `units` (laid out for
// the new shard count) into `into`: one tensor per unit for each kind wanted, any device (kinds
// left empty are not read; export reads the masters only). The checkpoint must have the kinds
// asked for (manifest.json's optimizer says which it has).
LoadedCheckpoint load_checkpoint(const std::string& directory, const std::vector<UnitLayout>& units, int shard,
                                 Communicator& world, const ShardState& into);

}  // namespace st

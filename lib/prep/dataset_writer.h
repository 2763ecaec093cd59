// Writes pairs as numbered HDF5 shards of a dataset directory and returns their manifest
// entries (pair/token counts, CRC-32). Used by prep and synth.
#pragma once

#include <string>
#include <vector>

#include "data/manifest.h"
#include "data/pair_shard.h"

namespace st {

struct ShardingOptions {
  uint64_t pairs_per_shard = 100000;
  DatasetLayout layout;
};

// Shards are named <name_prefix>-<k:05>.h5 for k = 0, 1, ...
std::vector<ShardEntry> write_shards(const std::string& directory, const std::string& name_prefix,
                                     const PairTable& pairs, const ShardInfo& info,
                                     const ShardingOptions& options);

}  // namespace st

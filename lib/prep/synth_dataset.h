// A synthetic dataset directory (train/ and optionally val/, each with HDF5 shards and
// manifest.json) written through a staging directory that is renamed into place at the end.
// Used by `shardtune synth` and `shardtune bench`.
#pragma once

#include <cstdint>
#include <string>

#include "prep/dataset_writer.h"
#include "prep/synth.h"

namespace st {

// Writes `pairs` pairs (the first val_size of them in val/) to `output`, replacing it if it
// exists. Throws IoError / ConfigError.
void write_synthetic_dataset(const std::string& output, const SynthOptions& synth, uint64_t pairs, double val_size,
                             const ShardingOptions& sharding);

}  // namespace st

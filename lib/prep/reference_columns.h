// Adding reference log-probs (ref_chosen_logp / ref_rejected_logp) to a pair dataset without
// ever leaving it half-written: every shard is written again under a new name
// (x.h5 <-> x.ref.h5), then manifest.json switches to the new files in one rename, and only
// then are the old files removed. A crash at any point leaves a dataset that reads whole (the
// old or the new one; at worst with unreferenced files next to it).
#pragma once

#include <string>
#include <vector>

#include "data/manifest.h"

namespace st {

// "a.h5" -> "a.ref.h5", "a.ref.h5" -> "a.h5".
std::string reference_shard_name(const std::string& file);

// Shard `entry` of `directory` written again under reference_shard_name() with the columns
// (one value per pair, in shard order; the shard's compression is kept). Returns its new
// manifest entry.
ShardEntry write_shard_with_reference(const std::string& directory, const ShardEntry& entry,
                                      const std::vector<float>& chosen, const std::vector<float>& rejected);

// Points manifest.json at `shards` (atomically), records `info`, removes the replaced files.
void commit_reference_shards(const std::string& directory, Manifest manifest, std::vector<ShardEntry> shards,
                             const ReferenceInfo& info);

}  // namespace st

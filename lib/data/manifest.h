// manifest.json of a pair dataset directory: the shards in order with pair/token counts and a
// CRC-32 of each file, plus the kind and vocabulary they share.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/pair_table.h"
#include "util/file_io.h"  // file_crc32 for the shard checksums

namespace st {

struct ShardEntry {
  std::string file;    // relative to the directory
  uint64_t pairs = 0;
  uint64_t tokens = 0;
  uint32_t crc32 = 0;
};

// Where a dataset's ref_chosen_logp / ref_rejected_logp came from (shardtune precompute-ref):
// they hold only for the same model and the same truncation (data.cutoff_len).
struct ReferenceInfo {
  std::string model;        // model.path, or "preset <name> (seed s)"
  int64_t cutoff_len = 0;   // data.cutoff_len the pairs were truncated to
  std::string dtype;        // compute dtype of the scoring
  std::string fingerprint{};  // model_fingerprint of the scoring model ("" in data written before it)
  std::string chat_template{};  // the template the scored pairs were rendered with ("" for ids)
  int64_t partner_group = 0;    // mismatched partners' groups scored (train.micro_batch; data/pair_dataset.h); 0 = none
};

struct Manifest {
  PairKind kind = PairKind::dpo;
  int64_t vocab_size = 0;
  std::string split;   // train | val | ""
  std::string source;  // provenance
  std::vector<ShardEntry> shards;
  std::optional<ReferenceInfo> reference;  // set once reference log-probs were written
  int64_t cutoff_len = 0;  // prep --cutoff-len the pairs were cut to; 0 = not recorded (synth, older data)

  uint64_t total_pairs() const;
  uint64_t total_tokens() const;
};

inline constexpr const char* kManifestName = "manifest.json";

void write_manifest(const std::string& directory, const Manifest& manifest);  // atomic
// Throws DataError naming the file and field.
Manifest read_manifest(const std::string& directory);

}  // namespace st

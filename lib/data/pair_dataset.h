// A pair dataset directory opened for training: the manifest, every shard validated, and one
// global index space over all shards in manifest order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/manifest.h"
#include "data/pair_shard.h"

namespace st {

struct DatasetExpectations {
  std::optional<PairKind> kind;  // the training stage's kind
  int64_t model_vocab_size = 0;  // 0: not checked
  bool verify_checksums = false; // CRC-32 of every shard against the manifest (reads all bytes)
};

class PairDataset {
 public:
  // Throws DataError naming the directory/file and the fix.
  PairDataset(const std::string& directory, const DatasetExpectations& expect = {});

  const Manifest& manifest() const { return manifest_; }
  PairKind kind() const { return manifest_.kind; }
  uint64_t size() const { return offsets_.back(); }
  const std::string& directory() const { return directory_; }
  // Every shard carries ref_chosen_logp / ref_rejected_logp (shardtune precompute-ref).
  bool has_ref_logps() const;
  int64_t pad_id() const { return shards_.empty() ? 0 : shards_.front()->info().pad_id; }
  Pair get(uint64_t index) const;
  int64_t row_length(uint64_t index) const;

 private:
  std::pair<size_t, size_t> locate(uint64_t index) const;

  std::string directory_;
  Manifest manifest_;
  std::vector<std::unique_ptr<PairShardReader>> shards_;
  std::vector<uint64_t> offsets_{0};  // first global index of each shard, then the total
};

}  // namespace st

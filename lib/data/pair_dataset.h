// A pair dataset directory opened for training: the manifest, every shard validated, and one
// global index space over all shards in manifest order. Several directories (a mixture) are
// laid end to end in that space, each one a component.
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

// KTO's mismatched pairs, TRL's rule on an index space of `size` examples cut into groups of
// `group` consecutive indices (its per-device batch, here train.micro_batch): example i takes the
// completion of i - 1, the first of a group the last's. Fixed by the index, so the same under any
// rank count and shuffle, and precomputable; with the data in order, each micro-batch is a group.
uint64_t mismatched_partner(uint64_t index, uint64_t group, uint64_t size);

class PairDataset {
 public:
  // Throws DataError naming the directory/file and the fix.
  PairDataset(const std::string& directory, const DatasetExpectations& expect = {});
  PairDataset(const std::vector<std::string>& directories, const DatasetExpectations& expect = {});

  const Manifest& manifest() const { return manifests_.front(); }  // the first directory's
  PairKind kind() const { return manifest().kind; }
  uint64_t size() const { return offsets_.back(); }
  const std::string& directory() const { return directory_; }  // all of them, comma-separated

  size_t components() const { return directories_.size(); }
  const std::string& component_directory(size_t k) const { return directories_[k]; }
  const Manifest& component_manifest(size_t k) const { return manifests_[k]; }
  uint64_t component_begin(size_t k) const { return component_offsets_[k]; }
  uint64_t component_size(size_t k) const { return component_offsets_[k + 1] - component_offsets_[k]; }
  size_t component_of(uint64_t index) const;
  // Every shard carries ref_chosen_logp / ref_rejected_logp (shardtune precompute-ref).
  bool has_ref_logps() const;
  int64_t pad_id() const { return shards_.empty() ? 0 : shards_.front()->info().pad_id; }
  int64_t eos_id() const { return shards_.empty() ? -1 : shards_.front()->info().eos_id; }  // -1: none
  // The chat template the pairs were rendered with ("" for token-id input).
  std::string chat_template() const { return shards_.empty() ? "" : shards_.front()->info().chat_template; }
  Pair get(uint64_t index) const;
  // The example as a batch uses it: for KTO, with its mismatched partner's completion as the
  // second sequence (mismatched_partner over groups of `partner_group` indices of its component).
  Pair example(uint64_t index, int64_t partner_group) const;
  int64_t row_length(uint64_t index) const;

 private:
  std::pair<size_t, size_t> locate(uint64_t index) const;

  void open_directory(const std::string& directory, const DatasetExpectations& expect);

  std::string directory_;
  std::vector<std::string> directories_;
  std::vector<Manifest> manifests_;
  std::vector<uint64_t> component_offsets_{0};
  std::vector<std::unique_ptr<PairShardReader>> shards_;
  std::vector<uint64_t> offsets_{0};  // first global index of each shard, then the total
};

}  // namespace st

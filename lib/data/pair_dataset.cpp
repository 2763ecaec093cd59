#include "data/pair_dataset.h"

#include <algorithm>

#include "util/errors.h"

namespace st {

PairDataset::PairDataset(const std::string& directory, const DatasetExpectations& expect)
    : directory_(directory), manifest_(read_manifest(directory)) {
  if (expect.kind && *expect.kind != manifest_.kind) {
    const std::string expected = enum_name(*expect.kind);
    throw DataError(directory + ": holds " + enum_name(manifest_.kind) + " pairs but the stage trains on " + expected +
                    " pairs; point data.train at a " + expected + " dataset or change train.stage");
  }
  if (expect.model_vocab_size > 0 && manifest_.vocab_size > expect.model_vocab_size) {
    throw DataError(directory + ": tokenized for a vocabulary of " + std::to_string(manifest_.vocab_size) +
                    " but the model has " + std::to_string(expect.model_vocab_size) +
                    "; tokenize with the model's tokenizer");
  }
  for (const ShardEntry& entry : manifest_.shards) {
    const std::string path = directory + "/" + entry.file;
    if (expect.verify_checksums && file_crc32(path) != entry.crc32) {
      throw DataError(path + ": CRC-32 differs from manifest.json; the file changed or is damaged");
    }
    auto shard = std::make_unique<PairShardReader>(path);
    if (shard->size() != entry.pairs || shard->info().kind != manifest_.kind ||
        shard->info().vocab_size != manifest_.vocab_size) {
      throw DataError(path + ": pair count, kind or vocab_size differs from manifest.json");
    }
    offsets_.push_back(offsets_.back() + shard->size());
    shards_.push_back(std::move(shard));
  }
}

std::pair<size_t, size_t> PairDataset::locate(uint64_t index) const {
  if (index >= size()) {
    throw DataError(directory_ + ": pair index " + std::to_string(index) + " >= " + std::to_string(size()));
  }
  const size_t shard = std::upper_bound(offsets_.begin(), offsets_.end(), index) - offsets_.begin() - 1;
  return {shard, static_cast<size_t>(index - offsets_[shard])};
}

bool PairDataset::has_ref_logps() const {
  return std::all_of(shards_.begin(), shards_.end(), [](const auto& shard) { return shard->has_ref_logps(); });
}

Pair PairDataset::get(uint64_t index) const {
  const auto [shard, local] = locate(index);
  return shards_[shard]->read(local);
}

int64_t PairDataset::row_length(uint64_t index) const {
  const auto [shard, local] = locate(index);
  return shards_[shard]->row_length(local);
}

}  // namespace st

#include "data/pair_dataset.h"

#include <algorithm>

#include "util/errors.h"

namespace st {

PairDataset::PairDataset(const std::string& directory, const DatasetExpectations& expect)
    : PairDataset(std::vector<std::string>{directory}, expect) {}

PairDataset::PairDataset(const std::vector<std::string>& directories, const DatasetExpectations& expect) {
  if (directories.empty()) throw ConfigError("a dataset needs at least one directory");
  for (const std::string& directory : directories) {
    directory_ += (directory_.empty() ? "" : ", ") + directory;
    open_directory(directory, expect);
    if (manifests_.back().kind != manifests_.front().kind) {
      throw DataError(directory + ": holds " + enum_name(manifests_.back().kind) + " pairs but " + directories.front() +
                      " holds " + enum_name(manifests_.front().kind) + " pairs; a mixture needs one kind");
    }
  }
}

size_t PairDataset::component_of(uint64_t index) const {
  return std::upper_bound(component_offsets_.begin(), component_offsets_.end(), index) - component_offsets_.begin() - 1;
}

void PairDataset::open_directory(const std::string& directory, const DatasetExpectations& expect) {
  directories_.push_back(directory);
  manifests_.push_back(read_manifest(directory));
  const Manifest& manifest = manifests_.back();
  if (expect.kind && *expect.kind != manifest.kind) {
    const std::string expected = enum_name(*expect.kind);
    throw DataError(directory + ": holds " + enum_name(manifest.kind) + " pairs but the stage trains on " + expected +
                    " pairs; point data.train at a " + expected + " dataset or change train.stage");
  }
  if (expect.model_vocab_size > 0 && manifest.vocab_size > expect.model_vocab_size) {
    throw DataError(directory + ": tokenized for a vocabulary of " + std::to_string(manifest.vocab_size) +
                    " but the model has " + std::to_string(expect.model_vocab_size) +
                    "; tokenize with the model's tokenizer");
  }
  for (const ShardEntry& entry : manifest.shards) {
    const std::string path = directory + "/" + entry.file;
    if (expect.verify_checksums && file_crc32(path) != entry.crc32) {
      throw DataError(path + ": CRC-32 differs from manifest.json; the file changed or is damaged");
    }
    auto shard = std::make_unique<PairShardReader>(path);
    if (shard->size() != entry.pairs || shard->info().kind != manifest.kind ||
        shard->info().vocab_size != manifest.vocab_size) {
      throw DataError(path + ": pair count, kind or vocab_size differs from manifest.json");
    }
    // A micro-batch's pairs all carry a margin or none (the reward model's loss takes them whole).
    if (!shards_.empty() && shard->has_margins() != shards_.front()->has_margins()) {
      throw DataError(path + (shard->has_margins() ? " has" : " has no") + " margin column, but " +
                      shards_.front()->path() + (shard->has_margins() ? " has none" : " has one") +
                      "; prep every dataset of a run with margins or without");
    }
    offsets_.push_back(offsets_.back() + shard->size());
    shards_.push_back(std::move(shard));
  }
  component_offsets_.push_back(offsets_.back());
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

uint64_t mismatched_partner(uint64_t index, uint64_t group, uint64_t size) {
  const uint64_t first = index - index % std::max<uint64_t>(group, 1);
  const uint64_t end = std::min(size, first + std::max<uint64_t>(group, 1));
  return index == first ? end - 1 : index - 1;
}

Pair PairDataset::example(uint64_t index, int64_t partner_group) const {
  Pair pair = get(index);
  if (schema_of(kind()).second != SecondSequence::partner) return pair;
  const size_t k = component_of(index);
  const uint64_t begin = component_begin(k);
  const uint64_t partner = mismatched_partner(index - begin, static_cast<uint64_t>(partner_group), component_size(k));
  const auto [shard, local] = locate(begin + partner);
  pair.rejected = shards_[shard]->read_completion(local);  // the partner's prompt is not read
  return pair;
}

int64_t PairDataset::row_length(uint64_t index) const {
  const auto [shard, local] = locate(index);
  return shards_[shard]->row_length(local);
}

}  // namespace st

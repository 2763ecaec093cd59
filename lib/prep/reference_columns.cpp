#include "prep/reference_columns.h"

#include <filesystem>

#include "data/pair_shard.h"
#include "util/errors.h"

namespace st {

std::string reference_shard_name(const std::string& file) {
  const std::string marked = ".ref.h5";
  if (file.size() > marked.size() && file.compare(file.size() - marked.size(), marked.size(), marked) == 0) {
    return file.substr(0, file.size() - marked.size()) + ".h5";
  }
  const std::string stem = std::filesystem::path(file).extension() == ".h5" ? file.substr(0, file.size() - 3) : file;
  return stem + marked;
}

ShardEntry write_shard_with_reference(const std::string& directory, const ShardEntry& entry,
                                      const std::vector<float>& chosen, const std::vector<float>& rejected) {
  const PairShardReader reader(directory + "/" + entry.file);
  PairTable table = reader.read_all();
  if (chosen.size() != table.size() || rejected.size() != table.size()) {
    throw DataError(reader.path() + ": " + std::to_string(table.size()) + " pairs but " +
                    std::to_string(chosen.size()) + " reference log-probs");
  }
  table.ref_chosen_logp = chosen;
  table.ref_rejected_logp = rejected;
  DatasetLayout layout;
  layout.compress = reader.compressed();
  ShardEntry written = entry;
  written.file = reference_shard_name(entry.file);
  const std::string path = directory + "/" + written.file;
  write_pair_shard(path, table, reader.info(), layout);
  written.crc32 = file_crc32(path);
  return written;
}

void commit_reference_shards(const std::string& directory, Manifest manifest, std::vector<ShardEntry> shards,
                             const ReferenceInfo& info) {
  std::vector<std::string> replaced;
  for (const ShardEntry& entry : manifest.shards) replaced.push_back(entry.file);
  manifest.shards = std::move(shards);
  manifest.reference = info;
  write_manifest(directory, manifest);
  for (const std::string& file : replaced) std::filesystem::remove(directory + "/" + file);
}

}  // namespace st

#include "prep/dataset_writer.h"

#include <cstdio>

namespace st {

std::vector<ShardEntry> write_shards(const std::string& directory, const std::string& name_prefix,
                                     const PairTable& pairs, const ShardInfo& info,
                                     const ShardingOptions& options) {
  std::vector<ShardEntry> entries;
  for (size_t first = 0, k = 0; first < pairs.size(); first += options.pairs_per_shard, ++k) {
    const size_t last = std::min(pairs.size(), first + options.pairs_per_shard);
    PairTable part;
    part.kind = pairs.kind;
    for (size_t i = first; i < last; ++i) part.append(pairs.at(i));
    char name[256];
    std::snprintf(name, sizeof(name), "%s-%05zu.h5", name_prefix.c_str(), k);
    const std::string path = directory + "/" + name;
    write_pair_shard(path, part, info, options.layout);
    entries.push_back({name, part.size(), static_cast<uint64_t>(part.token_count()), file_crc32(path)});
  }
  return entries;
}

}  // namespace st

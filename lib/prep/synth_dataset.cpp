#include "prep/synth_dataset.h"

#include <cstdio>
#include <filesystem>
#include <tuple>

#include "data/manifest.h"

namespace st {

void write_synthetic_dataset(const std::string& output, const SynthOptions& synth, uint64_t pairs, double val_size,
                             const ShardingOptions& sharding) {
  namespace fs = std::filesystem;
  const std::string staging = output + ".tmp";
  fs::remove_all(staging);
  const auto val_pairs = static_cast<uint64_t>(static_cast<double>(pairs) * val_size + 0.5);
  const ShardInfo info{synth.kind, synth.vocab_size, kSynthBos, kSynthEos, kSynthPad, "",
                       "shardtune synth task=" + std::string(enum_name(synth.task)) + " seed=" + std::to_string(synth.seed)};
  for (const auto& [split, first, count] :
       {std::tuple<std::string, uint64_t, uint64_t>{"train", val_pairs, pairs - val_pairs}, {"val", 0, val_pairs}}) {
    if (count == 0) continue;
    fs::create_directories(staging + "/" + split);
    Manifest manifest{synth.kind, synth.vocab_size, split, info.source, {}, std::nullopt};
    // Generate shard by shard so a 1M-pair dataset never sits in memory whole.
    for (uint64_t done = 0, k = 0; done < count; done += sharding.pairs_per_shard, ++k) {
      const uint64_t n = std::min(sharding.pairs_per_shard, count - done);
      const PairTable part = synthesize_pairs(synth, first + done, n);
      char prefix[32];
      std::snprintf(prefix, sizeof(prefix), "part-%05lu", static_cast<unsigned long>(k));
      const auto entries = write_shards(staging + "/" + split, prefix, part, info, sharding);
      manifest.shards.insert(manifest.shards.end(), entries.begin(), entries.end());
    }
    write_manifest(staging + "/" + split, manifest);
  }
  if (fs::exists(output)) fs::remove_all(output);
  fs::rename(staging, output);
}

}  // namespace st

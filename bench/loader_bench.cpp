// Pair loader throughput (shuffled, one rank, files in the page cache) next to the raw
// sequential read speed of the same files, which bounds it.
// Usage: bench_loader DATASET_DIR [steps=200] [global_batch=512] [micro_batch=8]
// Make a 1M-pair dataset first: shardtune synth --output /tmp/synth1m --pairs 1000000 --max-len 64
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "data/pair_loader.h"
#include "util/timer.h"

namespace {

// Reads every shard file once with large read() calls; returns bytes read.
uint64_t read_files(const std::string& directory, const st::Manifest& manifest) {
  std::vector<char> buffer(8 << 20);
  uint64_t total = 0;
  for (const auto& shard : manifest.shards) {
    const int fd = ::open((directory + "/" + shard.file).c_str(), O_RDONLY);
    if (fd < 0) continue;
    for (ssize_t n; (n = ::read(fd, buffer.data(), buffer.size())) > 0;) total += n;
    ::close(fd);
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_loader DATASET_DIR [steps] [global_batch] [micro_batch]\n");
    return 2;
  }
  const std::string directory = argv[1];
  const int steps = argc > 2 ? std::atoi(argv[2]) : 200;
  st::LoaderOptions options;
  options.global_batch = argc > 3 ? std::atoll(argv[3]) : 512;
  options.collate.micro_batch = argc > 4 ? std::atoll(argv[4]) : 8;
  options.collate.cutoff_len = 4096;
  const st::Manifest manifest = st::read_manifest(directory);
  std::printf("dataset %s: %llu pairs, %llu tokens in %zu shards\n", directory.c_str(),
              (unsigned long long)manifest.total_pairs(), (unsigned long long)manifest.total_tokens(),
              manifest.shards.size());

  read_files(directory, manifest);  // warm the page cache
  st::Timer raw_timer;
  const uint64_t bytes = read_files(directory, manifest);
  const double raw_seconds = raw_timer.seconds();
  const double tokens_per_byte = double(manifest.total_tokens()) / bytes;

  // Reads alone (shuffled order, no collation), then the full loader with collation. Each
  // opens the dataset itself: HDF5 shares the chunk caches of datasets open at the same time.
  const st::GlobalSampler sampler(manifest.total_pairs(), options.global_batch, 0);
  const std::vector<uint64_t> order = sampler.epoch_order(0);
  const size_t sample = std::min<size_t>(order.size(), size_t(steps) * options.global_batch);
  double read_seconds = 0;
  uint64_t read_tokens = 0;
  {
    const st::PairDataset dataset(directory);
    st::Timer read_timer;
    for (size_t i = 0; i < sample; ++i) read_tokens += dataset.get(order[i]).token_count();
    read_seconds = read_timer.seconds();
  }

  st::PairLoader loader(std::make_shared<const st::PairDataset>(directory), options, 0, 1);
  st::Timer loader_timer;
  uint64_t pairs = 0, tokens = 0;
  for (int s = 0; s < steps; ++s) {
    for (const auto& micro : loader.next().micro_batches) {
      pairs += micro.pairs;
      tokens += micro.real_tokens;
    }
  }
  const double loader_seconds = loader_timer.seconds();
  std::printf("%-44s %12s %14s\n", "path", "pairs/s", "tokens/s");
  std::printf("%-44s %12s %14.3g   (%.2f GB/s)\n", "raw sequential read() of the shard files", "-",
              bytes * tokens_per_byte / raw_seconds, bytes / raw_seconds / 1e9);
  std::printf("%-44s %12.0f %14.3g\n", "shuffled pair reads (PairDataset::get)", sample / read_seconds,
              read_tokens / read_seconds);
  std::printf("%-44s %12.0f %14.3g\n", "loader: sample + read + collate (prefetched)", pairs / loader_seconds,
              tokens / loader_seconds);
  std::printf("(loader tokens count prompt+response rows as fed to the model: DPO prompts twice)\n");

  // Padding: share of padded positions that hold real tokens, with and without length grouping.
  for (bool grouped : {false, true}) {
    st::LoaderOptions padding_options = options;
    padding_options.collate.group_by_length = grouped;
    st::PairLoader padding_loader(std::make_shared<const st::PairDataset>(directory), padding_options, 0, 1);
    uint64_t real = 0, padded = 0;
    for (int s = 0; s < 50; ++s) {
      for (const auto& micro : padding_loader.next().micro_batches) {
        real += micro.real_tokens;
        padded += micro.padded_tokens;
      }
    }
    std::printf("micro-batch fill, %-26s %5.1f%% real tokens (micro_batch %lld)\n",
                grouped ? "grouped by length:" : "in sampler order:", 100.0 * real / padded,
                (long long)options.collate.micro_batch);
  }
  return 0;
}

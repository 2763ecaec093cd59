// manifest.json of a pair dataset directory (shards, counts, checksums, reference log-probs).
#include "data/manifest.h"
#include "fuzz_target.h"

ST_FUZZ_TARGET(dataset_manifest) {
  st::fuzz::scratch_file("manifest.json", data, size);
  return st::fuzz::refusal([&] {
    const st::Manifest manifest = st::read_manifest(st::fuzz::scratch_directory());
    (void)manifest.total_pairs();
    (void)manifest.total_tokens();
  });
}

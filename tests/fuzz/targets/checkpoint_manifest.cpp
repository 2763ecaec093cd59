// manifest.json of a sharded checkpoint (progress, sampler cursor, loss scaler, units, files).
#include "ckpt/checkpoint_manifest.h"
#include "fuzz_target.h"

ST_FUZZ_TARGET(checkpoint_manifest) {
  st::fuzz::scratch_file("manifest.json", data, size);
  return st::fuzz::refusal([&] {
    (void)st::format_checkpoint_manifest(st::read_checkpoint_manifest(st::fuzz::scratch_directory()));
  });
}

// One rank file of a checkpoint (rank_XXXXX.h5): shard s of every unit's fp32 master weights
// and AdamW moments as 1-D float32 datasets "<kind>.<unit name>" ([shard_numel] of the
// geometry that wrote it), and the rank's RNG state. Readers take any element range, which is
// what resharding needs: a new rank reads the overlapping pieces of the old files.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fsdp/unit_layout.h"
#include "util/hdf5_handle.h"
#include "util/rng_state.h"

namespace st {

enum class StateKind { master, exp_avg, exp_avg_sq };
inline constexpr StateKind kAllStateKinds[] = {StateKind::master, StateKind::exp_avg, StateKind::exp_avg_sq};
const char* state_kind_name(StateKind kind);

// A rank's state, one [shard_numel] tensor per unit and kind: fp32 host tensors to write;
// any device and dtype to read into (load_checkpoint).
struct ShardState {
  std::vector<at::Tensor> master, exp_avg, exp_avg_sq;
  const std::vector<at::Tensor>& of(StateKind kind) const;
  std::vector<at::Tensor>& of(StateKind kind);
};

// Writes the file (created, truncated) and closes it; not synced. Throws IoError naming it.
void write_rank_file(const std::string& path, const std::vector<UnitLayout>& units, const ShardState& state,
                     const RngState& rng, int shard, int shard_count);

class RankFileReader {
 public:
  explicit RankFileReader(const std::string& path);  // throws CheckpointError naming it
  // Elements [first, first + count) of `kind` of unit `unit` into `out`.
  void read(StateKind kind, const std::string& unit, int64_t first, int64_t count, float* out) const;
  RngState rng() const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  Hdf5Handle file_;
};

}  // namespace st

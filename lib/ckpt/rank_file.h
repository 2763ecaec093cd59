// One rank file of a checkpoint (rank_XXXXX.h5): shard s of every unit's fp32 master weights
// and AdamW moments as 1-D datasets "<kind>.<unit name>" ([shard_numel] of the geometry that
// wrote it), and the rank's RNG state. The moments are fp32 (optim.name = adamw) or
// adamw8bit's uint8 codes [shard_numel] and fp32 absmax [shard_numel / 256] (whole blocks per
// shard). Readers take any element range, which is what resharding needs: a new rank reads the
// overlapping pieces of the old files.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "fsdp/unit_layout.h"
#include "util/hdf5_handle.h"
#include "util/rng_state.h"

namespace st {

enum class StateKind { master, exp_avg, exp_avg_sq, exp_avg_code, exp_avg_absmax, exp_avg_sq_code, exp_avg_sq_absmax };
inline constexpr StateKind kAllStateKinds[] = {StateKind::master,         StateKind::exp_avg,
                                               StateKind::exp_avg_sq,     StateKind::exp_avg_code,
                                               StateKind::exp_avg_absmax, StateKind::exp_avg_sq_code,
                                               StateKind::exp_avg_sq_absmax};
const char* state_kind_name(StateKind kind);
at::ScalarType state_kind_dtype(StateKind kind);  // fp32, or uint8 for codes
int64_t state_kind_stride(StateKind kind);         // unit elements per stored value: 1, or 256 for absmax

// A rank's state, one tensor per unit of each kind it has ([shard_numel / stride]): host
// tensors of the kind's dtype to write; any device (and, fp32 kinds, dtype) to read into.
struct ShardState {
  std::array<std::vector<at::Tensor>, std::size(kAllStateKinds)> kinds;
  const std::vector<at::Tensor>& of(StateKind kind) const { return kinds[static_cast<size_t>(kind)]; }
  std::vector<at::Tensor>& of(StateKind kind) { return kinds[static_cast<size_t>(kind)]; }
};

// Writes the file (created, truncated) and closes it; not synced. Throws IoError naming it.
void write_rank_file(const std::string& path, const std::vector<UnitLayout>& units, const ShardState& state,
                     const RngState& rng, int shard, int shard_count);

class RankFileReader {
 public:
  explicit RankFileReader(const std::string& path);  // throws CheckpointError naming it
  // Stored values [first, first + count) of `kind` of unit `unit` into `out` (of the kind's dtype).
  void read(StateKind kind, const std::string& unit, int64_t first, int64_t count, void* out) const;
  RngState rng() const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  Hdf5Handle file_;
};

}  // namespace st

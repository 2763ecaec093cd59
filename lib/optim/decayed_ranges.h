// The elements of a shard that get weight decay, as ranges: the optimizer needs no idea of
// parameters or units, only where the matrices lie (lib/fsdp computes it from its layouts).
#pragma once

#include <cstdint>
#include <vector>

namespace st {

// Elements [offset, offset + length) of one shard.
struct ElementRange {
  int64_t offset = 0;
  int64_t length = 0;
};
// Per shard: the ranges that get weight decay.
using DecayedRanges = std::vector<std::vector<ElementRange>>;

}  // namespace st

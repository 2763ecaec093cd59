// Train/validation split of one dataset by index (data.val_size): a seeded permutation decides
// which pairs are held out, so the split depends only on (dataset size, fraction, seed) - never
// on the rank count - and both halves come back in ascending index order.
#pragma once

#include <cstdint>
#include <vector>

namespace st {

struct IndexSplit {
  std::vector<uint64_t> train, val;
};

// round(fraction x size) pairs go to val (at least one when fraction > 0 and size > 1; at least
// one pair always stays in train).
IndexSplit hold_out(uint64_t size, double fraction, uint64_t seed);

}  // namespace st

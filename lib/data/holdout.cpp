#include "data/holdout.h"

#include <algorithm>
#include <cmath>

#include "data/sampler.h"

namespace st {

IndexSplit hold_out(uint64_t size, double fraction, uint64_t seed) {
  IndexSplit split;
  uint64_t held = static_cast<uint64_t>(std::llround(fraction * static_cast<double>(size)));
  if (fraction > 0.0 && size > 1) held = std::max<uint64_t>(held, 1);
  held = std::min<uint64_t>(held, size > 0 ? size - 1 : 0);
  if (held == 0) {
    split.train.resize(size);
    for (uint64_t i = 0; i < size; ++i) split.train[i] = i;
    return split;
  }
  // The sampler's permutation of a distinct stream (epoch UINT64_MAX is never trained on).
  const GlobalSampler sampler(size, 1, seed, true);
  const std::vector<uint64_t>& order = sampler.epoch_order(UINT64_MAX - 1);
  split.val.assign(order.begin(), order.begin() + static_cast<int64_t>(held));
  split.train.assign(order.begin() + static_cast<int64_t>(held), order.end());
  std::sort(split.val.begin(), split.val.end());
  std::sort(split.train.begin(), split.train.end());
  return split;
}

}  // namespace st

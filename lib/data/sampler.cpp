#include "data/sampler.h"

#include <numeric>
#include <random>

#include "data/dataset_mixture.h"
#include "util/errors.h"

namespace st {
namespace {

// Unbiased draw in [0, bound) from raw 64-bit outputs (Lemire), so the permutation is the same
// on every platform (std::uniform_int_distribution is implementation-defined).
uint64_t bounded(std::mt19937_64& engine, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound;
  while (true) {
    const unsigned __int128 product = static_cast<unsigned __int128>(engine()) * bound;
    if (static_cast<uint64_t>(product) >= threshold) return static_cast<uint64_t>(product >> 64);
  }
}

}  // namespace

GlobalSampler::GlobalSampler(uint64_t dataset_size, uint64_t global_batch, uint64_t seed,
                             bool shuffle)
    : size_(dataset_size), global_batch_(global_batch), seed_(seed), shuffle_(shuffle) {
  if (dataset_size == 0) throw DataError("the training dataset is empty");
  if (global_batch == 0) throw ConfigError("train.global_batch must be > 0");
}

GlobalSampler::GlobalSampler(const std::vector<uint64_t>& sizes, const std::vector<double>& weights,
                             uint64_t global_batch, uint64_t seed, bool shuffle)
    : GlobalSampler(std::accumulate(sizes.begin(), sizes.end(), uint64_t{0}), global_batch, seed, shuffle) {
  if (sizes.size() != weights.size()) throw ConfigError("a mixture needs one weight per dataset");
  for (uint64_t size : sizes) {
    if (size == 0) throw DataError("a dataset of the training mixture is empty");
  }
  if (sizes.size() > 1) {
    sizes_ = sizes;
    weights_ = weights;
  }
}

uint64_t GlobalSampler::batches_per_epoch() const {
  return (size_ + global_batch_ - 1) / global_batch_;
}

const std::vector<uint64_t>& GlobalSampler::epoch_order(uint64_t epoch) const {
  if (epoch == cached_epoch_) return cached_order_;
  if (!sizes_.empty()) {
    cached_order_ = mixture_epoch_order(sizes_, weights_, seed_, epoch, shuffle_);
  } else {
    cached_order_.resize(size_);
    std::iota(cached_order_.begin(), cached_order_.end(), 0);
    if (shuffle_) {
      std::mt19937_64 engine(seed_ * 0x9e3779b97f4a7c15ull + epoch * 0xbf58476d1ce4e5b9ull + 1);
      for (uint64_t i = size_ - 1; i > 0; --i) std::swap(cached_order_[i], cached_order_[bounded(engine, i + 1)]);
    }
  }
  cached_epoch_ = epoch;
  return cached_order_;
}

GlobalBatch GlobalSampler::batch_at(const SamplerCursor& cursor) const {
  SamplerCursor start = cursor;
  if (start.consumed >= size_) start = {start.epoch + 1, 0};  // an epoch ended exactly here
  const auto& order = epoch_order(start.epoch);
  const uint64_t end = std::min(size_, start.consumed + global_batch_);
  GlobalBatch batch;
  batch.indices.assign(order.begin() + static_cast<int64_t>(start.consumed),
                       order.begin() + static_cast<int64_t>(end));
  batch.start = start;
  batch.next = end == size_ ? SamplerCursor{start.epoch + 1, 0} : SamplerCursor{start.epoch, end};
  return batch;
}

std::vector<uint64_t> rank_slice(const std::vector<uint64_t>& batch, int rank, int ranks) {
  const size_t first = batch.size() * rank / ranks;
  const size_t last = batch.size() * (rank + 1) / ranks;
  return {batch.begin() + static_cast<int64_t>(first), batch.begin() + static_cast<int64_t>(last)};
}

}  // namespace st

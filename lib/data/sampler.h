// The deterministic, resumable data-parallel sampler. One global index space over the dataset;
// epoch e visits a permutation drawn from (seed, e); global batch b of an epoch is positions
// [b*G, (b+1)*G) of it (the last one may be short); rank r takes its contiguous slice. The cursor
// (epoch, samples consumed) does not depend on the rank count, so a resumed run - with any
// number of ranks - continues with exactly the next unseen samples. A mixture of datasets
// (dataset_mixture.h) only changes the epoch's order.
#pragma once

#include <cstdint>
#include <vector>

namespace st {

struct SamplerCursor {
  uint64_t epoch = 0;
  uint64_t consumed = 0;  // samples of this epoch already handed out, over all ranks
  bool operator==(const SamplerCursor& other) const {
    return epoch == other.epoch && consumed == other.consumed;
  }
};

struct GlobalBatch {
  std::vector<uint64_t> indices;  // dataset indices, in order
  SamplerCursor start;            // where this batch began
  SamplerCursor next;             // the cursor after it
};

class GlobalSampler {
 public:
  GlobalSampler(uint64_t dataset_size, uint64_t global_batch, uint64_t seed, bool shuffle = true);
  // A weighted mixture of datasets laid end to end (dataset_mixture.h); one dataset is the
  // plain sampler.
  GlobalSampler(const std::vector<uint64_t>& sizes, const std::vector<double>& weights, uint64_t global_batch,
                uint64_t seed, bool shuffle = true);

  GlobalBatch batch_at(const SamplerCursor& cursor) const;
  uint64_t batches_per_epoch() const;
  // Epoch e's visiting order. The reference is to a one-epoch cache: valid until the next call.
  const std::vector<uint64_t>& epoch_order(uint64_t epoch) const;

 private:
  uint64_t size_;
  std::vector<uint64_t> sizes_;  // the mixture's datasets; empty for one dataset
  std::vector<double> weights_;
  uint64_t global_batch_;
  uint64_t seed_;
  bool shuffle_;
  mutable uint64_t cached_epoch_ = UINT64_MAX;
  mutable std::vector<uint64_t> cached_order_;
};

// Rank r's contiguous slice of a global batch; slice sizes differ by at most one.
std::vector<uint64_t> rank_slice(const std::vector<uint64_t>& batch, int rank, int ranks);

}  // namespace st

// Per-rank stream of training steps: the sampler's global batch, this rank's slice, read from
// the shards and collated into micro-batches on a background thread (bounded prefetch).
#pragma once

#include <memory>
#include <vector>

#include "data/collate.h"
#include "data/pair_dataset.h"
#include "data/prefetcher.h"
#include "data/sampler.h"

namespace st {

struct LoaderOptions {
  uint64_t global_batch = 1;   // pairs per optimizer step over all ranks
  uint64_t seed = 0;
  bool shuffle = true;
  CollateOptions collate;
  size_t prefetch_steps = 2;
  // Dataset indices to sample from (a train or validation split); null = the whole dataset.
  std::shared_ptr<const std::vector<uint64_t>> subset;
  // A weighted mixture: samples of each dataset (in subset order, laid end to end) and weights;
  // empty or one dataset = plain sampling.
  std::vector<uint64_t> mixture_sizes;
  std::vector<double> mixture_weights;
};

struct StepBatch {
  std::vector<MicroBatch> micro_batches;  // this rank's; counts may differ between ranks on the
                                          // short last batch of an epoch
  GlobalBatch global;                     // indices and cursors (start / next) of the step
  std::vector<uint64_t> mixture_counts;   // the global batch's samples of each mixture dataset
};

class PairLoader {
 public:
  PairLoader(std::shared_ptr<const PairDataset> dataset, const LoaderOptions& options, int rank,
             int ranks, const SamplerCursor& start = {});
  // The next step's batch; rethrows read errors from the prefetch thread.
  StepBatch next();

  uint64_t steps_per_epoch() const { return sampler_.batches_per_epoch(); }

  // Builds one step synchronously (what the prefetch thread runs).
  static StepBatch build_step(const PairDataset& dataset, const GlobalSampler& sampler,
                              const LoaderOptions& options, int rank, int ranks,
                              const SamplerCursor& cursor);

 private:
  std::shared_ptr<const PairDataset> dataset_;
  LoaderOptions options_;
  GlobalSampler sampler_;
  SamplerCursor cursor_;  // producer side
  std::unique_ptr<Prefetcher<StepBatch>> prefetcher_;
};

}  // namespace st

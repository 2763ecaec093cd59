#include "data/pair_loader.h"

namespace st {
namespace {

uint64_t sampled_size(const PairDataset& dataset, const LoaderOptions& options) {
  return options.subset ? options.subset->size() : dataset.size();
}

GlobalSampler make_sampler(const PairDataset& dataset, const LoaderOptions& options) {
  if (options.mixture_sizes.size() > 1) {
    return {options.mixture_sizes, options.mixture_weights, options.global_batch, options.seed, options.shuffle};
  }
  return {sampled_size(dataset, options), options.global_batch, options.seed, options.shuffle};
}

}  // namespace

PairLoader::PairLoader(std::shared_ptr<const PairDataset> dataset, const LoaderOptions& options,
                       int rank, int ranks, const SamplerCursor& start)
    : dataset_(std::move(dataset)),
      options_(options),
      sampler_(make_sampler(*dataset_, options)),
      cursor_(start) {
  prefetcher_ = std::make_unique<Prefetcher<StepBatch>>(
      [this, rank, ranks] {
        StepBatch step = build_step(*dataset_, sampler_, options_, rank, ranks, cursor_);
        cursor_ = step.global.next;
        return step;
      },
      options.prefetch_steps);
}

StepBatch PairLoader::next() { return prefetcher_->next(); }

StepBatch PairLoader::build_step(const PairDataset& dataset, const GlobalSampler& sampler,
                                 const LoaderOptions& options, int rank, int ranks,
                                 const SamplerCursor& cursor) {
  StepBatch step;
  step.global = sampler.batch_at(cursor);
  if (options.mixture_sizes.size() > 1) {
    step.mixture_counts.assign(dataset.components(), 0);
    for (uint64_t index : step.global.indices) {
      step.mixture_counts[dataset.component_of(options.subset ? options.subset->at(index) : index)] += 1;
    }
  }
  std::vector<uint64_t> mine = rank_slice(step.global.indices, rank, ranks);
  if (options.subset) {
    for (uint64_t& index : mine) index = options.subset->at(index);
  }
  std::vector<int64_t> lengths;
  for (uint64_t index : mine) lengths.push_back(dataset.row_length(index));
  for (const auto& group : plan_micro_batches(lengths, dataset.kind(), options.collate)) {
    std::vector<Pair> pairs;
    for (size_t position : group) pairs.push_back(dataset.example(mine[position], options.collate.micro_batch));
    step.micro_batches.push_back(collate_pairs(std::move(pairs), dataset.kind(), options.collate));
  }
  return step;
}

}  // namespace st

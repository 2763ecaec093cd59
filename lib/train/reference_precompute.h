// `shardtune precompute-ref`: the frozen reference model scores every pair of a dataset once,
// sharded across ranks (each takes a contiguous block of pairs), and the log-probs are written
// into the shards (reference_columns.h), so DPO training then needs no reference forward.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "data/collate.h"
#include "data/manifest.h"
#include "data/pair_dataset.h"
#include "distributed/communicator.h"
#include "train/reference.h"
#include "train/train_config.h"

namespace st {

struct ReferenceLogps {
  std::vector<float> chosen, rejected;  // one per pair of the dataset, in index order
};

// Collective over `host` and the reference's shard group. `collate` sets truncation (it must be
// the training run's data.cutoff_len) and the pairs per forward pass.
ReferenceLogps score_reference_logps(const PairDataset& dataset, ReferenceModel& reference,
                                     const CollateOptions& collate, const at::Device& device, Communicator& host);

// Scores `directory` (examples of `kind`; KTO's second sequence is its mismatched partner's, in
// groups of collate.micro_batch, recorded in the manifest) and rewrites it with the log-probs
// (rank r writes shards r, r + size, ...; rank 0 commits the manifest). Collective over `host`.
// Returns the pairs scored.
uint64_t precompute_reference(const std::string& directory, PairKind kind, ReferenceModel& reference,
                              const CollateOptions& collate,
                              const at::Device& device, const ReferenceInfo& info, Communicator& host);

}  // namespace st

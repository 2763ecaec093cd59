// Pairs -> micro-batch tensors. Each row is prompt + response, right-padded to the longest row;
// targets hold the next token at response positions and kIgnoreTarget elsewhere (the loss mask).
// DPO uses the concatenated layout: rows [0, P) are prompt+chosen, rows [P, 2P) prompt+rejected,
// so one forward pass scores both.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "data/pair_table.h"
#include "data/truncation.h"

namespace st {

struct CollateOptions {
  int64_t cutoff_len = 1024;   // pairs longer than this are truncated (prompt left, response right)
  int64_t pad_id = 0;
  int64_t micro_batch = 1;     // pairs per micro-batch (when max_tokens is 0)
  int64_t max_tokens = 0;      // > 0: padded tokens per micro-batch instead of a pair count
  bool group_by_length = false;  // sort a rank's slice by length before cutting micro-batches
};

struct MicroBatch {
  at::Tensor input_ids;        // [R, T] int64 (R = pairs for SFT, 2 x pairs for DPO)
  at::Tensor targets;          // [R, T] int64
  at::Tensor ref_logps;        // [R] fp32 when the data has them (chosen rows, then rejected)
  std::vector<int64_t> row_lengths;  // [R] non-padding tokens of each row
  int64_t pairs = 0;
  int64_t target_tokens = 0;   // response tokens that carry loss
  int64_t real_tokens = 0;     // non-padding tokens
  int64_t padded_tokens = 0;   // R x T
};

MicroBatch collate_pairs(std::vector<Pair> pairs, PairKind kind, const CollateOptions& options);

// Groups of positions into `lengths` (tokens per pair: prompt + longest response), one group
// per micro-batch, in order; with group_by_length the slice is sorted by length first.
std::vector<std::vector<size_t>> plan_micro_batches(const std::vector<int64_t>& lengths,
                                                    PairKind kind, const CollateOptions& options);

}  // namespace st

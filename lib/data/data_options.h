// [data] section: where the tokenized pairs come from and how they are cut.
#pragma once

#include <cstdint>
#include <string>

namespace st {

// data.micro_batch_tokens = -1: sized to the memory at start (train/recompute_choice.h).
constexpr int64_t kAutoMicroBatchTokens = -1;

struct DataOptions {
  std::string train;        // directory of HDF5 shards with manifest.json, or "dir_a:0.7, dir_b:0.3"
  std::string val;          // validation shards (comma-separated); empty = hold out data.val_size of train
  double val_size = 0.0;    // fraction of train pairs held out for evaluation, [0, 1)
  int64_t cutoff_len = 1024;  // max tokens per sequence (prompt + completion) [tokens]
  bool shuffle = true;             // a new permutation of the pairs each epoch; false = file order
  bool group_by_length = false;    // sort a rank's share of each step by length (less padding)
  int64_t micro_batch_tokens = 0;  // > 0: cut micro-batches by padded tokens, not pair count; -1 = auto
                                   // (with packing: by the pairs' tokens, and the row length)
  bool packing = false;            // several whole sequences per row, attention kept in each
  int64_t prefetch_steps = 2;      // steps read and collated ahead on a background thread
  bool verify_checksums = false;   // CRC-32 of every shard against manifest.json at start
};

}  // namespace st

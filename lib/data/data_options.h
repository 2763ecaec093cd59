// [data] section: where the tokenized pairs come from and how they are cut.
#pragma once

#include <cstdint>
#include <string>

namespace st {

struct DataOptions {
  std::string train;        // directory of HDF5 shards with manifest.json
  std::string val;          // validation shards; empty = hold out data.val_size of train
  double val_size = 0.0;    // fraction of train pairs held out for evaluation, [0, 1)
  int64_t cutoff_len = 1024;  // max tokens per sequence (prompt + completion) [tokens]
};

}  // namespace st

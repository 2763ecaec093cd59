// [data] section: where the tokenized pairs come from and how they are cut.
#pragma once

#include <cstdint>
#include <string>

namespace st {

// data.micro_batch_tokens = -1: sized to the memory at start (train/recompute_choice.h).
constexpr int64_t kAutoMicroBatchTokens = -1;

struct DataOptions {
  // The keys of [data]: their help, unit and range are declared once, in train/train_config_schema.cpp.
  std::string train;
  std::string val;
  double val_size = 0.0;
  int64_t cutoff_len = 1024;
  bool shuffle = true;
  bool group_by_length = false;
  int64_t micro_batch_tokens = 0;
  bool packing = false;
  int64_t prefetch_steps = 2;
  bool verify_checksums = false;
};

}  // namespace st

// The replay source of an online objective (grpo.rollouts, rloo.rollouts): completions stored in a JSONL file
// instead of sampled, for tests and offline RL. Line i holds {"completion_ids": [[...], ...]},
// the group of completions of dataset row i, each used exactly as given (no cut at EOS or at
// max_completion_length). The file is indexed once (its line offsets); a row is read when asked.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "train/rollout_options.h"

namespace st {

class ReplayCompletions {
 public:
  // Throws DataError naming the file when it cannot be read.
  ReplayCompletions(const RolloutOptions& options, int64_t vocab_size);

  // Row `row`'s completions; throws DataError naming the file, the line, the field and the fix
  // (a missing line, a group of another size, an id outside the vocabulary, an empty completion).
  std::vector<std::vector<int64_t>> group(uint64_t row);
  uint64_t rows() const { return line_offsets_.size(); }

 private:
  std::string path_, section_;  // the file, and the section whose keys name it
  int64_t group_size_, vocab_size_;
  std::ifstream file_;
  std::vector<uint64_t> line_offsets_;  // where each non-empty line starts
};

}  // namespace st

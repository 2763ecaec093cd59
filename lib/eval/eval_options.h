// The [eval] section of a training run: benchmark tasks scored at every evaluation on the
// training ranks with the current weights (docs/evaluation.md), beside the validation loss.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace st {

struct EvalOptions {
  // The keys of [eval]: their help, unit and range are declared once, in train/train_config_schema.cpp.
  std::string tasks;         // task files, comma-separated
  int64_t limit = 0;         // first documents of each task (0 = all)
  std::string tokenizer;     // directory of tokenizer.json; "" = model.path's
  int64_t max_length = 0;    // tokens the model sees at once; 0 = config.json's max_position_embeddings
  bool add_bos = false;      // the harness's add_bos_token
};

// The task files of a comma-separated list, blanks trimmed.
inline std::vector<std::string> eval_task_paths(const std::string& list) {
  std::vector<std::string> paths;
  std::stringstream items(list);
  for (std::string item; std::getline(items, item, ',');) {
    const size_t first = item.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    paths.push_back(item.substr(first, item.find_last_not_of(" \t") - first + 1));
  }
  return paths;
}

}  // namespace st

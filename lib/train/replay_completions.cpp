#include "train/replay_completions.h"

#include <nlohmann/json.hpp>

#include "util/errors.h"

namespace st {

ReplayCompletions::ReplayCompletions(const RolloutOptions& options, int64_t vocab_size)
    : path_(options.rollouts), section_(options.section), group_size_(options.num_generations), vocab_size_(vocab_size), file_(path_, std::ios::binary) {
  if (!file_) throw DataError(path_ + ": cannot read the replay file (" + section_ + ".rollouts); check the path");
  std::string line;
  uint64_t offset = 0;
  while (std::getline(file_, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) line_offsets_.push_back(offset);
    offset += line.size() + 1;
  }
  file_.clear();
}

std::vector<std::vector<int64_t>> ReplayCompletions::group(uint64_t row) {
  const std::string where = path_ + ": line " + std::to_string(row + 1);
  if (row >= line_offsets_.size()) {
    throw DataError(path_ + ": no line for dataset row " + std::to_string(row) + " (the file has " +
                    std::to_string(line_offsets_.size()) + " lines); the replay file needs one line per dataset row");
  }
  file_.seekg(static_cast<std::streamoff>(line_offsets_[row]));
  std::string line;
  std::getline(file_, line);
  nlohmann::json record;
  try {
    record = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(where + ": not JSON (" + e.what() + ")");
  }
  const auto fix = std::string(": each line is {\"completion_ids\": [[ids...], ...]} with ") + section_ + ".num_generations = " +
                   std::to_string(group_size_) + " completions";
  if (!record.is_object() || !record.contains("completion_ids") || !record["completion_ids"].is_array()) {
    throw DataError(where + ": no completion_ids list" + fix);
  }
  const nlohmann::json& lists = record["completion_ids"];
  if (static_cast<int64_t>(lists.size()) != group_size_) {
    throw DataError(where + ": completion_ids holds " + std::to_string(lists.size()) + " completions" + fix);
  }
  std::vector<std::vector<int64_t>> out;
  for (size_t k = 0; k < lists.size(); ++k) {
    const nlohmann::json& ids = lists[k];
    if (!ids.is_array() || ids.empty()) throw DataError(where + ": completion " + std::to_string(k) + " is not a non-empty list of ids" + fix);
    std::vector<int64_t> completion;
    for (const nlohmann::json& id : ids) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab_size_) {
        throw DataError(where + ": completion " + std::to_string(k) + " holds " + id.dump() +
                        ", not a token id of the model's vocabulary [0, " + std::to_string(vocab_size_) + ")");
      }
      completion.push_back(id.get<int64_t>());
    }
    out.push_back(std::move(completion));
  }
  return out;
}

}  // namespace st

#include "train/reward_program.h"

#include <cmath>
#include <limits>

#include "util/errors.h"

namespace st {
namespace {

// Where completion i came from, for messages.
std::string completion_text(const RewardBatch& batch, size_t i) {
  std::string text = "completion " + std::to_string(i) + " of this rank's " + std::to_string(batch.size());
  if (i < batch.rows.size()) text += " (dataset row " + std::to_string(batch.rows[i]) + ")";
  return text;
}

}  // namespace

RewardProgram::RewardProgram(const RewardOptions& options)
    : options_(options), process_(std::make_unique<LineProcess>(options.command)) {}

nlohmann::json RewardProgram::request(const RewardBatch& batch) {
  nlohmann::json line = nlohmann::json::object();
  line["prompts"] = batch.prompt_values;
  if (batch.decoded) {
    nlohmann::json completions = nlohmann::json::array();
    for (size_t i = 0; i < batch.size(); ++i) {
      const bool conversational = i < batch.prompt_values.size() && batch.prompt_values[i].is_array();
      if (conversational) {
        completions.push_back(nlohmann::json::array({{{"role", "assistant"}, {"content", batch.completions[i]}}}));
      } else {
        completions.push_back(batch.completions[i]);
      }
    }
    line["completions"] = std::move(completions);
  }
  line["completion_ids"] = batch.completion_ids;
  for (const auto& [column, values] : batch.columns.items()) {
    if (!line.contains(column)) line[column] = values;
  }
  return line;
}

std::vector<double> RewardProgram::rewards(const RewardBatch& batch) const {
  const std::string who = "reward program `" + options_.command + "` (reward.command)";
  std::string answer;
  try {
    answer = process_->ask(request(batch).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                           options_.timeout_s);
  } catch (const IoError& error) {
    throw RewardError("reward.command: " + std::string(error.what()) + " while scoring " + std::to_string(batch.size()) +
                      " completions; it must answer each JSON line with one line {\"rewards\": [...]}");
  }
  const nlohmann::json parsed = nlohmann::json::parse(answer, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("rewards") || !parsed["rewards"].is_array()) {
    throw RewardError(who + " answered '" + answer.substr(0, 200) +
                      "': the answer is one line {\"rewards\": [number or null, ...]}");
  }
  const nlohmann::json& values = parsed["rewards"];
  if (values.size() != batch.size()) {
    throw RewardError(who + " answered " + std::to_string(values.size()) + " rewards for " +
                      std::to_string(batch.size()) + " completions: one per completion, in order");
  }
  std::vector<double> rewards;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].is_null()) {
      rewards.push_back(std::numeric_limits<double>::quiet_NaN());
    } else if (values[i].is_number() && std::isfinite(values[i].get<double>())) {
      rewards.push_back(values[i].get<double>());
    } else {
      throw RewardError(who + " answered " + values[i].dump() + " for " + completion_text(batch, i) +
                        ": each reward is a finite number or null");
    }
  }
  return rewards;
}

}  // namespace st

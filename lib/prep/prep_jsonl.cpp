#include "prep/prep_jsonl.h"

#include <nlohmann/json.hpp>

#include "prep/prep_text.h"

namespace st {
namespace {

using nlohmann::json;

// Fills `out` or returns the problem.
std::optional<LineProblem> read_ids(const json& line, const std::string& field, int64_t vocab,
                                    std::vector<int32_t>& out) {
  if (!line.contains(field)) return LineProblem{"missing field", "field '" + field + "' is missing"};
  if (!line[field].is_array()) return LineProblem{"bad field", "field '" + field + "' is not a list"};
  for (const json& id : line[field]) {
    if (!id.is_number_integer()) {
      return LineProblem{"bad field", "field '" + field + "' holds " + id.dump()};
    }
    const auto value = id.get<int64_t>();
    if (value < 0 || value >= vocab) {
      return LineProblem{"id out of vocab", "token id " + std::to_string(value) + " in '" + field +
                                                "' is outside [0, " + std::to_string(vocab) + ")"};
    }
    out.push_back(static_cast<int32_t>(value));
  }
  return std::nullopt;
}

}  // namespace

std::variant<Pair, LineProblem> parse_pair_line(const std::string& text, PairKind kind, int64_t vocab_size,
                                                const ChatTemplate* chat) {
  json line;
  try {
    line = json::parse(text);
  } catch (const json::parse_error&) {
    return LineProblem{"bad json", "not valid JSON"};
  }
  if (!line.is_object()) return LineProblem{"bad json", "not a JSON object"};
  Pair pair;
  const bool dpo = kind == PairKind::dpo;
  if (is_text_record(line)) {
    if (!chat) {
      return LineProblem{"text record", "text fields need --tokenizer MODEL_DIR and --template NAME (or use *_ids)"};
    }
    auto tokenized = tokenize_text_record(line, kind, *chat);
    if (auto* problem = std::get_if<LineProblem>(&tokenized)) return *problem;
    pair = std::move(std::get<Pair>(tokenized));
    for (const auto* ids : {&pair.prompt, &pair.chosen, &pair.rejected}) {
      for (const int32_t id : *ids) {
        if (id >= vocab_size) {
          return LineProblem{"id out of vocab", "the tokenizer gave id " + std::to_string(id) + ", outside --vocab " +
                                                    std::to_string(vocab_size)};
        }
      }
    }
  } else {
    for (const auto& [field, target] :
         std::vector<std::pair<std::string, std::vector<int32_t>*>>{
             {"prompt_ids", &pair.prompt},
             {dpo ? "chosen_ids" : "completion_ids", &pair.chosen},
             {dpo ? "rejected_ids" : "", &pair.rejected}}) {
      if (field.empty()) continue;
      if (auto problem = read_ids(line, field, vocab_size, *target)) return *problem;
    }
  }
  if (pair.prompt.empty()) return LineProblem{"empty prompt", "'prompt_ids' is empty"};
  if (pair.chosen.empty() || (dpo && pair.rejected.empty())) {
    return LineProblem{"empty completion", "a response list is empty"};
  }
  if (dpo && pair.chosen == pair.rejected) {
    return LineProblem{"chosen equals rejected", "chosen and rejected are identical"};
  }
  return pair;
}

}  // namespace st

#include "prep/prep_jsonl.h"

#include <nlohmann/json.hpp>

#include "prep/prep_text.h"

namespace st {
namespace {

using nlohmann::json;

// Fills `out` or returns the problem.
std::optional<LineProblem> read_ids(const json& line, const std::string& field, int64_t vocab,
                                    std::vector<int32_t>& out) {
  if (!line.contains(field)) return LineProblem{LineReason::missing_field, "field '" + field + "' is missing"};
  if (!line[field].is_array()) return LineProblem{LineReason::bad_field, "field '" + field + "' is not a list"};
  for (const json& id : line[field]) {
    if (!id.is_number_integer()) {
      return LineProblem{LineReason::bad_field, "field '" + field + "' holds " + id.dump()};
    }
    const auto value = id.get<int64_t>();
    if (value < 0 || value >= vocab) {
      return LineProblem{LineReason::id_out_of_vocab, "token id " + std::to_string(value) + " in '" + field +
                                                "' is outside [0, " + std::to_string(vocab) + ")"};
    }
    out.push_back(static_cast<int32_t>(value));
  }
  return std::nullopt;
}

// A preference pair's optional margin (TRL's `margin` column: a reward model's loss subtracts it).
std::optional<LineProblem> read_margin(const json& line, PairKind kind, Pair& pair) {
  if (!line.contains("margin") || !stores_rejected(kind)) return std::nullopt;
  if (!line["margin"].is_number()) {
    return LineProblem{LineReason::bad_field, "field 'margin' must be a number, not " + line["margin"].dump()};
  }
  pair.margin = line["margin"].get<float>();
  return std::nullopt;
}

std::variant<Pair, LineProblem> read_id_record(const json& line, const RecordReading& reading) {
  Pair pair;
  const ExampleSchema& schema = schema_of(reading.kind);
  const bool second = schema.second == SecondSequence::stored;
  for (const auto& [field, target] : std::vector<std::pair<std::string, std::vector<int32_t>*>>{
           {"prompt_ids", &pair.prompt},
           {stores_completion(reading.kind) ? std::string(schema.completion_column) + "_ids" : "", &pair.chosen},
           {second ? std::string(schema.second_column) + "_ids" : "", &pair.rejected}}) {
    if (field.empty()) continue;
    if (auto problem = read_ids(line, field, reading.vocab_size, *target)) return *problem;
  }
  if (schema.labelled) {
    if (auto problem = read_label(line, reading.schema, pair.label)) return *problem;
  }
  return pair;
}

std::variant<Pair, LineProblem> read_text_record(const json& line, const RecordReading& reading) {
  if (!reading.chat) {
    return LineProblem{LineReason::text_record, "text records need --tokenizer MODEL_DIR (and --template NAME), or use *_ids"};
  }
  auto conversation = read_conversation(line, reading.format, reading.kind, reading.schema);
  if (auto* problem = std::get_if<LineProblem>(&conversation)) return *problem;
  auto tokenized = tokenize_conversation(std::get<Conversation>(conversation), reading.kind, *reading.chat,
                                         reading.train_on);
  if (auto* problem = std::get_if<LineProblem>(&tokenized)) return *problem;
  const Pair& pair = std::get<Pair>(tokenized);
  for (const auto* ids : {&pair.prompt, &pair.chosen, &pair.rejected}) {
    for (const int32_t id : *ids) {
      if (id >= reading.vocab_size) {
        return LineProblem{LineReason::id_out_of_vocab, "the tokenizer gave id " + std::to_string(id) + ", outside --vocab " +
                                                  std::to_string(reading.vocab_size)};
      }
    }
  }
  return tokenized;
}

}  // namespace

std::variant<Pair, LineProblem> parse_pair_record(const std::string& text, const RecordReading& reading) {
  json line;
  try {
    line = json::parse(text);
  } catch (const json::exception&) {
    return LineProblem{LineReason::bad_json, "not valid JSON"};
  }
  if (!line.is_object()) return LineProblem{LineReason::bad_json, "not a JSON object"};
  auto parsed = reading.format == RecordFormat::ids ? read_id_record(line, reading) : read_text_record(line, reading);
  if (auto* pair = std::get_if<Pair>(&parsed)) {
    if (auto problem = read_margin(line, reading.kind, *pair)) parsed = *problem;
  }
  if (auto* problem = std::get_if<LineProblem>(&parsed)) {
    // A record of another shape than its file's: say both, with the field that is wrong.
    const auto shape = detect_record_format(line, reading.schema);
    if (shape != reading.format && (problem->reason == LineReason::missing_field || problem->reason == LineReason::bad_field)) {
      return LineProblem{LineReason::wrong_shape, std::string("record shape ") + (shape ? enum_name(*shape) : "unknown") +
                                            ", but the file is " + enum_name(reading.format) + " (" +
                                            (reading.detected ? "detected from its first record" : "--format") +
                                            "): " + problem->detail};
    }
    return parsed;
  }
  Pair& pair = std::get<Pair>(parsed);
  const bool dpo = stores_rejected(reading.kind);
  if (pair.prompt.empty()) return LineProblem{LineReason::empty_prompt, "the prompt is empty"};
  if (schema_of(reading.kind).keeps_record) pair.record = line.dump();  // every column, for the reward functions
  if (!stores_completion(reading.kind)) return parsed;
  if (pair.chosen.empty() || (dpo && pair.rejected.empty())) {
    return LineProblem{LineReason::empty_completion, "a response is empty"};
  }
  if (dpo && pair.chosen == pair.rejected) {
    return LineProblem{LineReason::chosen_equals_rejected, "chosen and rejected are identical"};
  }
  return parsed;
}

}  // namespace st

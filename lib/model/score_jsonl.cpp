#include "model/score_jsonl.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "util/errors.h"

namespace st {
namespace {

using nlohmann::json;

std::vector<int64_t> token_list(const json& line, const std::string& field, const std::string& where,
                                int64_t vocab_size) {
  if (!line.contains(field) || !line.at(field).is_array()) {
    throw DataError(where + ": field '" + field + "' must be a list of token ids");
  }
  std::vector<int64_t> ids;
  for (const json& id : line.at(field)) {
    if (!id.is_number_integer()) {
      throw DataError(where + ": field '" + field + "' holds " + id.dump() + ", not a token id");
    }
    const int64_t value = id.get<int64_t>();
    if (value < 0 || value >= vocab_size) {
      throw DataError(where + ": token id " + std::to_string(value) + " in '" + field +
                      "' is outside the model's vocabulary [0, " + std::to_string(vocab_size) +
                      ") (config.json vocab_size); tokenize with this model's tokenizer");
    }
    ids.push_back(value);
  }
  return ids;
}

}  // namespace

std::vector<ScoreRequest> read_score_requests(const std::string& path, int64_t vocab_size,
                                              int64_t max_positions) {
  std::ifstream in(path);
  if (!in) throw DataError(path + ": cannot open the input JSONL file");
  std::vector<ScoreRequest> requests;
  std::string text;
  for (int64_t number = 1; std::getline(in, text); ++number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(number);
    json line;
    try {
      line = json::parse(text);
    } catch (const json::exception& error) {
      throw DataError(where + ": not valid JSON (" + error.what() + ")");
    }
    if (!line.is_object()) throw DataError(where + ": expected a JSON object per line");
    ScoreRequest request{token_list(line, "prompt_ids", where, vocab_size),
                         token_list(line, "completion_ids", where, vocab_size)};
    if (request.prompt_ids.empty()) {
      throw DataError(where + ": 'prompt_ids' is empty; the first completion token needs a "
                              "preceding token (prepend the BOS id)");
    }
    const auto length = static_cast<int64_t>(request.prompt_ids.size() + request.completion_ids.size());
    if (length > max_positions) {
      throw DataError(where + ": " + std::to_string(length) +
                      " tokens exceed the model's max_position_embeddings (" +
                      std::to_string(max_positions) + "); truncate the pair");
    }
    requests.push_back(std::move(request));
  }
  return requests;
}

std::string format_score_line(const ScoreResult& result, ModelHead head) {
  if (head == ModelHead::score) return json{{"reward", result.reward}}.dump();
  json line = {{"logp", result.logp}, {"token_logps", result.token_logps}, {"num_tokens", result.token_logps.size()}};
  if (!result.routing.empty()) {
    json layers = json::array();
    for (const SequenceRouting& routed : result.routing) {
      json experts = json::array(), weights = json::array();
      for (size_t t = 0; t * static_cast<size_t>(routed.k) < routed.experts.size(); ++t) {
        const auto begin = static_cast<std::ptrdiff_t>(t * static_cast<size_t>(routed.k)), end = begin + routed.k;
        experts.push_back(std::vector<int64_t>(routed.experts.begin() + begin, routed.experts.begin() + end));
        weights.push_back(std::vector<float>(routed.weights.begin() + begin, routed.weights.begin() + end));
      }
      layers.push_back({{"layer", routed.layer}, {"experts", experts}, {"weights", weights}});
    }
    line["routing"] = layers;
  }
  return line.dump();
}

}  // namespace st

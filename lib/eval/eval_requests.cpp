#include "eval/eval_requests.h"

#include <algorithm>
#include <optional>

#include "util/errors.h"

namespace st {

EncodeSettings encode_settings_for(const Tokenizer& tokenizer, const ModelConfig& config, bool add_bos, int64_t max_length,
                                   const std::string& who) {
  EncodeSettings settings;
  settings.add_bos = add_bos;
  settings.max_length = max_length > 0 ? max_length : config.max_position_embeddings;
  const auto id_of = [&](const std::string& token) -> std::optional<int32_t> {
    return token.empty() ? std::nullopt : tokenizer.token_id(token);
  };
  const std::optional<int32_t> bos = id_of(tokenizer.bos_token()), eos = id_of(tokenizer.eos_token());
  if (bos) settings.bos_id = *bos;
  if (add_bos && !bos) throw ConfigError(who + ": add_bos, but the tokenizer names no bos_token (tokenizer_config.json)");
  // The harness conditions empty contexts on BOS, else on the end-of-text token.
  if (bos || eos || !config.eos_token_ids.empty()) {
    settings.prefix_id = bos ? *bos : eos ? *eos : config.eos_token_ids.front();
  } else {
    throw ConfigError(who + ": neither the tokenizer (bos_token, eos_token) nor config.json (eos_token_id) names a "
                      "token to condition empty contexts on; add bos_token to tokenizer_config.json");
  }
  return settings;
}

std::vector<int64_t> end_of_sequence_ids(const ModelConfig& config, const Tokenizer* tokenizer) {
  std::vector<int64_t> ids = config.eos_token_ids;
  if (tokenizer != nullptr && !tokenizer->eos_token().empty()) {
    if (const auto eos = tokenizer->token_id(tokenizer->eos_token())) ids.push_back(*eos);
  }
  return ids;
}

std::vector<int64_t> encode_text(const Tokenizer& tokenizer, const std::string& text, const EncodeSettings& settings) {
  std::vector<int64_t> ids;
  if (settings.add_bos && settings.bos_id >= 0) ids.push_back(settings.bos_id);
  for (int32_t id : tokenizer.encode(text)) ids.push_back(id);
  return ids;
}

ScoreRequest loglikelihood_request(const Tokenizer& tokenizer, const std::string& context, const std::string& continuation,
                                   const EncodeSettings& settings, const std::string& where) {
  std::string head = context, tail = continuation;
  const size_t kept = head.find_last_not_of(" \t\n\r\f\v");
  const size_t spaces = kept == std::string::npos ? head.size() : head.size() - kept - 1;
  if (spaces > 0) {
    tail = head.substr(head.size() - spaces) + tail;
    head.resize(head.size() - spaces);
  }
  ScoreRequest request;
  if (head.empty()) {
    request.prompt_ids = {settings.prefix_id};
    for (int32_t id : tokenizer.encode(tail)) request.completion_ids.push_back(id);
  } else {
    request.prompt_ids = encode_text(tokenizer, head, settings);
    const std::vector<int64_t> whole = encode_text(tokenizer, head + tail, settings);
    const size_t split = std::min(request.prompt_ids.size(), whole.size());
    request.completion_ids.assign(whole.begin() + static_cast<std::ptrdiff_t>(split), whole.end());
  }
  const auto completion = static_cast<int64_t>(request.completion_ids.size());
  if (completion > settings.max_length) {
    throw DataError(where + ": the continuation is " + std::to_string(completion) + " tokens, more than the " +
                    std::to_string(settings.max_length) + " the model sees at once; shorten it or raise --max-length");
  }
  // The model sees the last max_length + 1 tokens but one: keep the context's tail.
  const int64_t room = settings.max_length + 1 - completion;
  if (static_cast<int64_t>(request.prompt_ids.size()) > room) {
    request.prompt_ids.erase(request.prompt_ids.begin(), request.prompt_ids.end() - room);
  }
  return request;
}

std::vector<ScoreRequest> rolling_windows(const std::vector<int64_t>& tokens, int64_t prefix_id, int64_t max_length) {
  std::vector<ScoreRequest> windows;
  if (tokens.empty()) return windows;
  const auto total = static_cast<int64_t>(tokens.size());
  const int64_t first = std::min(max_length, total);
  windows.push_back({{prefix_id}, {tokens.begin(), tokens.begin() + first}});
  for (int64_t predicted = first; predicted < total;) {
    const int64_t length = std::min(total - predicted, max_length);
    const int64_t end = predicted + length;
    // Conditioned on the max_length - length tokens before the window (its input is max_length long).
    const int64_t context_start = std::max<int64_t>(0, end - max_length - 1);
    windows.push_back({{tokens.begin() + context_start, tokens.begin() + predicted}, {tokens.begin() + predicted, tokens.begin() + end}});
    predicted = end;
  }
  return windows;
}

std::vector<int64_t> generation_prompt(const Tokenizer& tokenizer, const std::string& context, const EncodeSettings& settings,
                                       int64_t max_new_tokens) {
  std::vector<int64_t> ids = encode_text(tokenizer, context, settings);
  const int64_t room = std::max<int64_t>(1, settings.max_length - max_new_tokens);
  if (static_cast<int64_t>(ids.size()) > room) ids.erase(ids.begin(), ids.end() - room);
  if (ids.empty()) ids.push_back(settings.prefix_id);
  return ids;
}

}  // namespace st

#include "prep/prep_text.h"

#include <optional>
#include <stdexcept>

#include "util/errors.h"

namespace st {
namespace {

using nlohmann::json;

std::optional<LineProblem> bad(const std::string& field, const std::string& what) {
  return LineProblem{"bad field", "field '" + field + "' " + what};
}

// A string (one user message) or a list of {"role", "content"} objects.
std::optional<LineProblem> read_messages(const json& line, const std::string& field, std::vector<ChatMessage>& out) {
  if (!line.contains(field)) return LineProblem{"missing field", "field '" + field + "' is missing"};
  const json& node = line[field];
  if (node.is_string()) {
    out.push_back({"user", node.get<std::string>()});
    return std::nullopt;
  }
  if (!node.is_array()) return bad(field, "is neither a string nor a list of messages");
  for (size_t i = 0; i < node.size(); ++i) {
    const json& m = node[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string()) {
      return bad(field, "[" + std::to_string(i) + "] is not {\"role\": \"...\", \"content\": \"...\"}");
    }
    out.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  }
  return std::nullopt;
}

// A string, or a list of messages whose only one is the assistant's.
std::optional<LineProblem> read_reply(const json& line, const std::string& field, std::string& out) {
  std::vector<ChatMessage> messages;
  if (auto problem = read_messages(line, field, messages)) return problem;
  if (line[field].is_string()) {
    out = messages.front().content;
    return std::nullopt;
  }
  if (messages.size() != 1 || messages.front().role != "assistant") {
    return bad(field, "must hold exactly one message with role 'assistant'");
  }
  out = messages.front().content;
  return std::nullopt;
}

}  // namespace

bool is_text_record(const json& line) {
  return !line.contains("prompt_ids") && (line.contains("prompt") || line.contains("messages"));
}

std::variant<Pair, LineProblem> tokenize_text_record(const json& line, PairKind kind, const ChatTemplate& chat) {
  std::vector<ChatMessage> prompt;
  std::vector<std::string> replies;
  if (line.contains("system")) {
    if (!line["system"].is_string()) return *bad("system", "is not a string");
    prompt.push_back({"system", line["system"].get<std::string>()});
  }
  if (kind == PairKind::sft && line.contains("messages")) {
    if (auto problem = read_messages(line, "messages", prompt)) return *problem;
    if (prompt.empty() || prompt.back().role != "assistant") {
      return *bad("messages", "must end with the assistant's message (the completion)");
    }
    replies.push_back(prompt.back().content);
    prompt.pop_back();
  } else {
    if (auto problem = read_messages(line, "prompt", prompt)) return *problem;
    for (const char* field : kind == PairKind::dpo ? std::vector<const char*>{"chosen", "rejected"}
                                                   : std::vector<const char*>{"completion"}) {
      replies.emplace_back();
      if (auto problem = read_reply(line, field, replies.back())) return *problem;
    }
  }
  Pair pair;
  try {
    pair.prompt = chat.prompt_ids(prompt);
    pair.chosen = chat.completion_ids(replies[0]);
    if (kind == PairKind::dpo) pair.rejected = chat.completion_ids(replies[1]);
  } catch (const std::invalid_argument& e) {
    return LineProblem{"bad turns", e.what()};
  } catch (const TokenizerError& e) {
    return LineProblem{"untokenizable", e.what()};
  }
  return pair;
}

}  // namespace st

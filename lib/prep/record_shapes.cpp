#include "prep/record_shapes.h"

#include <algorithm>

namespace st {
namespace {

using nlohmann::json;

LineProblem missing(const std::string& field) { return {LineReason::missing_field, "field '" + field + "' is missing"}; }
LineProblem bad(const std::string& field, const std::string& what) {
  return {LineReason::bad_field, "field '" + field + "' " + what};
}

std::optional<LineProblem> read_string(const json& record, const std::string& field, std::string& out) {
  if (!record.contains(field)) return missing(field);
  if (!record[field].is_string()) return bad(field, "is not a string");
  out = record[field].get<std::string>();
  return std::nullopt;
}

// An optional "system" string goes first.
std::optional<LineProblem> read_system(const json& record, const std::string& field, std::vector<ChatMessage>& out) {
  if (!record.contains(field) || record[field].is_null()) return std::nullopt;
  std::string system;
  if (auto problem = read_string(record, field, system)) return problem;
  if (!system.empty()) out.push_back({ChatRole::system, system});
  return std::nullopt;
}

// A message's content: a string, or a list of typed parts whose text parts are joined
// (LlamaFactory's {"type": "text", "value"}, OpenAI's {"type": "text", "text"}).
std::optional<LineProblem> read_content(const json& content, const std::string& where, std::string& out) {
  if (content.is_string()) {
    out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) return bad(where, "is neither a string nor a list of content parts");
  out.clear();
  for (size_t k = 0; k < content.size(); ++k) {
    const json& part = content[k];
    const std::string at = where + "[" + std::to_string(k) + "]";
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      return bad(at, "is not {\"type\": \"text\", \"value\": \"...\"}");
    }
    const std::string type = part["type"].get<std::string>();
    if (type != "text") {
      return bad(at + ".type", "is '" + type + "'; only text parts are read (tools, tool calls, reasoning and "
                               "media are not): drop the record or turn the part into text");
    }
    const char* key = part.contains("value") ? "value" : "text";
    if (!part.contains(key) || !part[key].is_string()) return bad(at, "has no string 'value' (or 'text')");
    out += part[key].get<std::string>();
  }
  return std::nullopt;
}

// LlamaFactory's per-message loss_weight: 0 or 1, and 1 only on assistant turns, because a
// turn is trained wholly or not at all and only replies are (prompts and other roles never).
std::optional<LineProblem> read_loss_weight(const json& message, const std::string& where, ChatMessage& out) {
  if (!message.contains("loss_weight") || message["loss_weight"].is_null()) return std::nullopt;
  const json& weight = message["loss_weight"];
  const std::string field = where + ".loss_weight";
  if (!weight.is_number()) return bad(field, "is not a number");
  const double value = weight.get<double>();
  if (value != 0.0 && value != 1.0) {
    return bad(field, "is " + weight.dump() + "; shardtune trains a turn wholly or not at all, so only 0 and 1 are "
                      "honoured: round it, or drop the record");
  }
  if (value == 1.0 && out.role != ChatRole::assistant) {
    return bad(field, "is 1 on a '" + std::string(enum_name(out.role)) + "' message; only assistant replies carry loss: set it to 0");
  }
  out.trained = value == 1.0;
  return std::nullopt;
}

// The assistant's reply that ends `messages`, taken off it. The preference loss compares it, so
// it must carry loss.
std::optional<LineProblem> take_final_reply(std::vector<ChatMessage>& messages, const std::string& field,
                                            std::string& reply) {
  if (messages.empty() || messages.back().role != ChatRole::assistant) {
    return bad(field, "must end with the assistant's message (the completion)");
  }
  if (!messages.back().trained) {
    return bad(field + "[" + std::to_string(messages.size() - 1) + "].loss_weight",
               "is 0 on the final reply, which is what the preference loss compares: set it to 1");
  }
  reply = messages.back().content;
  messages.pop_back();
  return std::nullopt;
}

// A reply: a string, or a list holding one message with role 'assistant'.
std::optional<LineProblem> read_reply(const json& record, const std::string& field, std::string& out) {
  std::vector<ChatMessage> messages;
  if (auto problem = read_role_messages(record, field, messages)) return problem;
  if (record[field].is_string()) {
    out = messages.front().content;
    return std::nullopt;
  }
  if (messages.size() != 1 || messages.front().role != ChatRole::assistant) {
    return bad(field, "must hold exactly one message with role 'assistant'");
  }
  return take_final_reply(messages, field, out);
}

std::optional<LineProblem> read_preference(const json& record, const RecordSchema& schema, Conversation& out) {
  if (auto problem = read_reply(record, schema.chosen, out.chosen)) return problem;
  return read_reply(record, schema.rejected, out.rejected);
}

// Preference records whose two fields are whole conversations sharing everything but their
// last message (the implicit prompt): TRL's chosen/rejected, LlamaFactory's chosen_messages /
// rejected_messages. The shared messages are appended to out.messages.
std::optional<LineProblem> read_whole_conversations(const json& record, const std::string& chosen_field,
                                                    const std::string& rejected_field, Conversation& out) {
  std::vector<ChatMessage> chosen, rejected;
  if (auto problem = read_role_messages(record, chosen_field, chosen)) return problem;
  if (auto problem = read_role_messages(record, rejected_field, rejected)) return problem;
  if (!record[chosen_field].is_array() || !record[rejected_field].is_array()) {
    return missing("prompt");  // strings without a prompt: nothing to answer
  }
  if (auto problem = take_final_reply(chosen, chosen_field, out.chosen)) return problem;
  if (auto problem = take_final_reply(rejected, rejected_field, out.rejected)) return problem;
  const bool same_prompt = std::equal(chosen.begin(), chosen.end(), rejected.begin(), rejected.end(),
                                      [](const ChatMessage& a, const ChatMessage& b) {
                                        return a.role == b.role && a.content == b.content;
                                      });
  if (!same_prompt) {
    return bad(rejected_field, "differs from '" + chosen_field + "' before the last message (the implicit prompt "
                               "must be shared); give the prompt in 'prompt'");
  }
  out.messages.insert(out.messages.end(), chosen.begin(), chosen.end());
  return std::nullopt;
}

// OpenAI / TRL messages, also LlamaFactory's newer records (typed content parts, loss_weight,
// chosen_messages / rejected_messages for preferences).
std::variant<Conversation, LineProblem> read_messages_shape(const json& record, PairKind kind,
                                                            const RecordSchema& schema) {
  Conversation out;
  if (auto problem = read_system(record, schema.system, out.messages)) return *problem;
  const bool whole_conversations = record.contains("chosen_messages");
  if (whole_conversations) {
    if (kind != PairKind::dpo) {
      return LineProblem{LineReason::wrong_kind, "a preference record (chosen_messages / rejected_messages); prep it with "
                                       "--kind dpo"};
    }
    if (auto problem = read_whole_conversations(record, "chosen_messages", "rejected_messages", out)) return *problem;
    return out;
  }
  if (!record.contains("messages") || !record["messages"].is_array()) {
    return record.contains("messages") ? bad("messages", "is not a list of messages") : missing("messages");
  }
  if (auto problem = read_role_messages(record, "messages", out.messages)) return *problem;
  if (kind == PairKind::dpo) {
    if (auto problem = read_preference(record, schema, out)) return *problem;
  } else if (record["messages"].empty() || out.messages.back().role != ChatRole::assistant) {
    return bad("messages", "must end with the assistant's message (the completion)");
  }
  return out;
}

// TRL: prompt + completion (trained alone), prompt + chosen/rejected, or chosen/rejected as
// whole conversations.
std::variant<Conversation, LineProblem> read_trl_shape(const json& record, PairKind kind, const RecordSchema& schema) {
  Conversation out;
  out.last_turn_only = true;
  if (auto problem = read_system(record, schema.system, out.messages)) return *problem;
  if (!stores_completion(kind)) {  // prompt-only: the completions are sampled in training
    if (record.contains("prompt") && record["prompt"].is_string()) {
      out.text_prompt = record["prompt"].get<std::string>();
      return out;
    }
    if (auto problem = read_role_messages(record, "prompt", out.messages)) return *problem;
    return out;
  }
  if (kind == PairKind::sft) {
    std::string completion;
    if (auto problem = read_role_messages(record, "prompt", out.messages)) return *problem;
    if (auto problem = read_reply(record, "completion", completion)) return *problem;
    out.messages.push_back({ChatRole::assistant, completion});
    return out;
  }
  if (record.contains("prompt")) {
    if (auto problem = read_role_messages(record, "prompt", out.messages)) return *problem;
    if (auto problem = read_preference(record, schema, out)) return *problem;
    return out;
  }
  if (auto problem = read_whole_conversations(record, schema.chosen, schema.rejected, out)) return *problem;
  return out;
}

// One ShareGPT message: {role_tag: tag, content_tag: text}.
std::variant<ChatMessage, LineProblem> sharegpt_message(const json& m, const std::string& where,
                                                        const RecordSchema& schema) {
  if (!m.is_object() || !m.contains(schema.role_tag) || !m[schema.role_tag].is_string() ||
      !m.contains(schema.content_tag) || !m[schema.content_tag].is_string()) {
    return bad(where, "is not {\"" + schema.role_tag + "\": \"...\", \"" + schema.content_tag + "\": \"...\"}");
  }
  const std::string tag = m[schema.role_tag].get<std::string>();
  const std::pair<const std::string*, ChatRole> roles[] = {{&schema.user_tag, ChatRole::user},
                                                           {&schema.assistant_tag, ChatRole::assistant},
                                                           {&schema.system_tag, ChatRole::system},
                                                           {&schema.observation_tag, ChatRole::tool},
                                                           {&schema.function_tag, ChatRole::function}};
  for (const auto& [name, role] : roles) {
    if (tag == *name) return ChatMessage{role, m[schema.content_tag].get<std::string>()};
  }
  return bad(where + "." + schema.role_tag, "is '" + tag + "'; expected " + schema.user_tag + ", " +
                                                schema.assistant_tag + ", " + schema.system_tag + ", " +
                                                schema.observation_tag + " or " + schema.function_tag);
}

std::optional<LineProblem> read_sharegpt_reply(const json& record, const std::string& field,
                                               const RecordSchema& schema, std::string& out) {
  if (!record.contains(field)) return missing(field);
  if (record[field].is_string()) {
    out = record[field].get<std::string>();
    return std::nullopt;
  }
  auto message = sharegpt_message(record[field], field, schema);
  if (auto* problem = std::get_if<LineProblem>(&message)) return *problem;
  if (std::get<ChatMessage>(message).role != ChatRole::assistant) {
    return bad(field, "must be the assistant's message ('" + schema.assistant_tag + "')");
  }
  out = std::get<ChatMessage>(message).content;
  return std::nullopt;
}

std::variant<Conversation, LineProblem> read_sharegpt_shape(const json& record, PairKind kind,
                                                            const RecordSchema& schema) {
  Conversation out;
  if (auto problem = read_system(record, schema.system, out.messages)) return *problem;
  const std::string& field = schema.conversations;
  if (!record.contains(field)) return missing(field);
  if (!record[field].is_array()) return bad(field, "is not a list of messages");
  for (size_t i = 0; i < record[field].size(); ++i) {
    auto message = sharegpt_message(record[field][i], field + "[" + std::to_string(i) + "]", schema);
    if (auto* problem = std::get_if<LineProblem>(&message)) return *problem;
    out.messages.push_back(std::get<ChatMessage>(message));
  }
  if (kind == PairKind::dpo) {
    if (auto problem = read_sharegpt_reply(record, schema.chosen, schema, out.chosen)) return *problem;
    if (auto problem = read_sharegpt_reply(record, schema.rejected, schema, out.rejected)) return *problem;
  } else if (out.messages.empty() || out.messages.back().role != ChatRole::assistant) {
    return bad(field, "must end with the assistant's message ('" + schema.assistant_tag + "', the completion)");
  }
  return out;
}

// Alpaca: the user turn is instruction, then input on a new line when there is one; history is
// [[instruction, response], ...] before it.
std::variant<Conversation, LineProblem> read_alpaca_shape(const json& record, PairKind kind,
                                                          const RecordSchema& schema) {
  Conversation out;
  if (auto problem = read_system(record, schema.system, out.messages)) return *problem;
  if (record.contains(schema.history) && !record[schema.history].is_null()) {
    const json& history = record[schema.history];
    if (!history.is_array()) return bad(schema.history, "is not a list of [instruction, response] pairs");
    for (size_t i = 0; i < history.size(); ++i) {
      const json& turn = history[i];
      if (!turn.is_array() || turn.size() != 2 || !turn[0].is_string() || !turn[1].is_string()) {
        return bad(schema.history + "[" + std::to_string(i) + "]", "is not [\"instruction\", \"response\"]");
      }
      out.messages.push_back({ChatRole::user, turn[0].get<std::string>()});
      out.messages.push_back({ChatRole::assistant, turn[1].get<std::string>()});
    }
  }
  std::string instruction, input;
  if (auto problem = read_string(record, schema.instruction, instruction)) return *problem;
  if (record.contains(schema.input) && !record[schema.input].is_null()) {
    if (auto problem = read_string(record, schema.input, input)) return *problem;
  }
  out.messages.push_back({ChatRole::user, input.empty() ? instruction : instruction + "\n" + input});
  if (kind == PairKind::dpo) {
    if (auto problem = read_string(record, schema.chosen, out.chosen)) return *problem;
    if (auto problem = read_string(record, schema.rejected, out.rejected)) return *problem;
    return out;
  }
  std::string output;
  if (auto problem = read_string(record, schema.output, output)) return *problem;
  out.messages.push_back({ChatRole::assistant, output});
  return out;
}

}  // namespace

std::optional<LineProblem> read_role_messages(const json& record, const std::string& field,
                                              std::vector<ChatMessage>& out) {
  if (!record.contains(field)) return missing(field);
  const json& node = record[field];
  if (node.is_string()) {
    out.push_back({ChatRole::user, node.get<std::string>()});
    return std::nullopt;
  }
  if (!node.is_array()) return bad(field, "is neither a string nor a list of messages");
  for (size_t i = 0; i < node.size(); ++i) {
    const json& m = node[i];
    const std::string where = field + "[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content")) {
      return bad(field, "[" + std::to_string(i) + "] is not {\"role\": \"...\", \"content\": \"...\"}");
    }
    ChatMessage message;
    if (!find_enum(m["role"].get<std::string>(), message.role)) {
      return bad(where + ".role", "is '" + m["role"].get<std::string>() + "'; expected one of " + enum_choices<ChatRole>());
    }
    if (auto problem = read_content(m["content"], where + ".content", message.content)) return problem;
    if (auto problem = read_loss_weight(m, where, message)) return problem;
    out.push_back(std::move(message));
  }
  return std::nullopt;
}

std::optional<RecordFormat> detect_record_format(const json& record, const RecordSchema& schema) {
  if (!record.is_object()) return std::nullopt;
  if (record.contains("prompt_ids")) return RecordFormat::ids;
  if (record.contains(schema.conversations)) return RecordFormat::sharegpt;
  if (record.contains(schema.instruction)) return RecordFormat::alpaca;
  if (record.contains("messages") || record.contains("chosen_messages")) return RecordFormat::messages;
  if (record.contains("prompt")) return RecordFormat::trl;
  if (record.contains(schema.chosen) && record[schema.chosen].is_array() && record.contains(schema.rejected)) {
    return RecordFormat::trl;
  }
  return std::nullopt;
}

std::variant<Conversation, LineProblem> read_conversation(const json& record, RecordFormat format, PairKind kind,
                                                          const RecordSchema& schema) {
  // A labelled example (KTO) is an SFT shape plus its label; a prompt alone is TRL's prompt-only shape.
  if (!stores_completion(kind) && format != RecordFormat::trl) {
    return LineProblem{LineReason::wrong_kind, std::string(enum_name(kind)) + " examples are TRL's prompt-only records "
                       "{\"prompt\": text or messages, ...} or {\"prompt_ids\": [...], ...}; this record is " +
                       enum_name(format)};
  }
  const PairKind shape = stores_rejected(kind) ? PairKind::dpo : stores_completion(kind) ? PairKind::sft : kind;
  std::variant<Conversation, LineProblem> read = LineProblem{LineReason::wrong_shape, "token-id records are not text"};
  switch (format) {
    case RecordFormat::messages: read = read_messages_shape(record, shape, schema); break;
    case RecordFormat::trl: read = read_trl_shape(record, shape, schema); break;
    case RecordFormat::sharegpt: read = read_sharegpt_shape(record, shape, schema); break;
    case RecordFormat::alpaca: read = read_alpaca_shape(record, shape, schema); break;
    case RecordFormat::ids: break;
  }
  if (!schema_of(kind).labelled || std::holds_alternative<LineProblem>(read)) return read;
  if (auto problem = read_label(record, schema, std::get<Conversation>(read).label)) return *problem;
  return read;
}

std::optional<LineProblem> read_label(const json& record, const RecordSchema& schema, std::optional<bool>& out) {
  if (!record.contains(schema.label)) return missing(schema.label);
  if (!record[schema.label].is_boolean()) {
    return bad(schema.label, "must be true (desirable) or false, not " + record[schema.label].dump());
  }
  out = record[schema.label].get<bool>();
  return std::nullopt;
}

}  // namespace st

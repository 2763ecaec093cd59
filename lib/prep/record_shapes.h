// The record shapes `shardtune prep` reads (docs/data-format.md has one example each):
//   ids       {"prompt_ids", "chosen_ids", "rejected_ids"} | {"prompt_ids", "completion_ids"}
//   messages  OpenAI / TRL conversational: {"messages": [{"role", "content"}, ...]}
//   trl       {"prompt": str | [messages], "chosen"/"rejected" | "completion": str | [message]},
//             or preference records whose chosen/rejected are whole conversations
//   sharegpt  {"conversations": [{"from", "value"}, ...], "system"?, "chosen"?, "rejected"?}
//   alpaca    {"instruction", "input"?, "output" | "chosen"/"rejected", "system"?, "history"?}
// Text shapes become a Conversation (roles system / user / assistant) for the chat template.
// Column and tag names default to LlamaFactory's and can be renamed (dataset_info.json).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "data/pair_table.h"
#include "prep/line_problem.h"
#include "tokenizer/chat_template.h"
#include "util/enum_names.h"

namespace st {

enum class RecordFormat { ids, messages, trl, sharegpt, alpaca };
template <>
struct EnumNames<RecordFormat> {
  static constexpr NamedValue<RecordFormat> table[] = {{RecordFormat::ids, "ids"},
                                                       {RecordFormat::messages, "messages"},
                                                       {RecordFormat::trl, "trl"},
                                                       {RecordFormat::sharegpt, "sharegpt"},
                                                       {RecordFormat::alpaca, "alpaca"}};
};

// Field names of the text shapes (LlamaFactory's `columns` and `tags`).
struct RecordSchema {
  std::string instruction = "instruction", input = "input", output = "output", history = "history";
  std::string system = "system", chosen = "chosen", rejected = "rejected";
  std::string conversations = "conversations";  // sharegpt; `messages` for the messages shape
  std::string role_tag = "from", content_tag = "value";
  std::string user_tag = "human", assistant_tag = "gpt", system_tag = "system";
  std::string observation_tag = "observation", function_tag = "function_call";
  std::string label = "label";  // labelled examples: true = the completion is desirable (TRL's label; LlamaFactory's kto_tag)
};

// A text record in the common shape.
struct Conversation {
  std::vector<ChatMessage> messages;  // SFT: ends with the assistant's reply; DPO: the prompt
  std::string chosen, rejected;       // DPO: the final assistant replies
  bool last_turn_only = false;        // prompt/completion records train the completion only
  // A prompt-only record's prompt as text (TRL's standard format): tokenized as written, with the
  // tokenizer's own special tokens, no chat template (TRL's processing_class(text=prompt)).
  std::optional<std::string> text_prompt;
  std::optional<bool> label;          // labelled examples: true = the completion is desirable
};

// A labelled example's label (schema.label: true = desirable) into `out`, or the problem.
std::optional<LineProblem> read_label(const nlohmann::json& record, const RecordSchema& schema, std::optional<bool>& out);

// record[field] read as messages into `out`: a string (one user message) or a list of
// {"role", "content", "loss_weight"?} objects (TRL's conversational shape); a problem names the
// field that is wrong.
std::optional<LineProblem> read_role_messages(const nlohmann::json& record, const std::string& field,
                                              std::vector<ChatMessage>& out);

// The shape of a record from its fields; nullopt when none fits.
std::optional<RecordFormat> detect_record_format(const nlohmann::json& record, const RecordSchema& schema);

// `record` read as `format` (a text shape); a problem names the field that is wrong. A KTO
// record is an SFT record of its shape (the final reply is the completion) with a boolean label
// (schema.kto_tag).
std::variant<Conversation, LineProblem> read_conversation(const nlohmann::json& record, RecordFormat format,
                                                          PairKind kind, const RecordSchema& schema);

}  // namespace st

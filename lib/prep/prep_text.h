// Text records for `shardtune prep --tokenizer MODEL_DIR --template NAME`, in the shapes users'
// data already has (TRL / LlamaFactory):
//   dpo: {"prompt": "..." | [messages], "chosen": "..." | [assistant message],
//         "rejected": "..." | [assistant message], "system"?: "..."}
//   sft: {"messages": [..., assistant message]} | {"prompt": ..., "completion": ...}
// rendered by the chat template and tokenized, prompt and completions apart.
#pragma once

#include <nlohmann/json.hpp>

#include <variant>

#include "data/pair_table.h"
#include "prep/prep_jsonl.h"
#include "tokenizer/chat_template.h"

namespace st {

// Whether `line` is a text record (rather than token ids).
bool is_text_record(const nlohmann::json& line);

// The pair's ids, or the problem (missing field, bad message, turns the template cannot render).
std::variant<Pair, LineProblem> tokenize_text_record(const nlohmann::json& line, PairKind kind,
                                                     const ChatTemplate& chat);

}  // namespace st

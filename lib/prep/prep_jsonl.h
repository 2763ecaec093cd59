// Parsing one line of `shardtune prep` input: DPO {"prompt_ids","chosen_ids","rejected_ids"} or
// SFT {"prompt_ids","completion_ids"}, or a text record (prep_text.h) tokenized by `chat`; token
// ids checked against the vocabulary. A bad line gives a short reason (counted and, with
// --strict, fatal) instead of a pair.
#pragma once

#include <string>
#include <variant>

#include "data/pair_table.h"

namespace st {

class ChatTemplate;

struct LineProblem {
  std::string reason;  // stable short key, e.g. "id out of vocab"
  std::string detail;  // with the field and value
};

// `chat` null: text records are refused (they need --tokenizer and --template).
std::variant<Pair, LineProblem> parse_pair_line(const std::string& text, PairKind kind, int64_t vocab_size,
                                                const ChatTemplate* chat = nullptr);

}  // namespace st

// The input of `shardtune generate`: one prompt per JSONL line, as ids ({"prompt_ids": [...]}),
// text ({"prompt": "..."}) or a conversation ({"messages": [{"role", "content"}, ...]}). Text
// goes through the tokenizer; with a chat template a text prompt is the user's message, and a
// conversation is rendered up to the assistant's turn. An optional "id" is carried to the output.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/chat_template.h"

namespace st {

struct GenerationPrompt {
  std::vector<int64_t> ids;
  nlohmann::json id;  // the line's "id", or null
};

// Blank lines are skipped. `chat` null: text is encoded as written, after the tokenizer's BOS;
// `tokenizer` null: only id prompts are accepted. Throws DataError naming file:line, the field
// and the fix (ids outside the vocabulary, prompts longer than `max_prompt_tokens`, ...).
std::vector<GenerationPrompt> read_generation_prompts(const std::string& path, const Tokenizer* tokenizer,
                                                      const ChatTemplate* chat, int64_t vocab_size,
                                                      int64_t max_prompt_tokens);

}  // namespace st

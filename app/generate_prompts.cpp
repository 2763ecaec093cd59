#include "generate_prompts.h"

#include <fstream>
#include <stdexcept>

#include "util/errors.h"

namespace st {
namespace {

using nlohmann::json;

std::vector<int64_t> encoded(const std::vector<int32_t>& ids) { return {ids.begin(), ids.end()}; }

std::vector<int64_t> prompt_ids(const json& line, const Tokenizer* tokenizer, const ChatTemplate* chat,
                                const std::string& where) {
  const bool text = line.contains("prompt") || line.contains("messages");
  if (text && !tokenizer) {
    throw DataError(where + "text prompts need a tokenizer: pass --tokenizer DIR (a model directory with "
                            "tokenizer.json), or give \"prompt_ids\"");
  }
  if (line.contains("prompt_ids")) {
    if (!line["prompt_ids"].is_array()) throw DataError(where + "\"prompt_ids\" must be a list of integers");
    std::vector<int64_t> ids;
    for (const json& id : line["prompt_ids"]) {
      if (!id.is_number_integer()) throw DataError(where + "\"prompt_ids\" must hold integers, got " + id.dump());
      ids.push_back(id.get<int64_t>());
    }
    return ids;
  }
  if (line.contains("prompt")) {
    if (!line["prompt"].is_string()) throw DataError(where + "\"prompt\" must be a string");
    const std::string prompt = line["prompt"].get<std::string>();
    if (chat) return encoded(chat->prompt_ids({{ChatRole::user, prompt}}));
    return encoded(tokenizer->encode(tokenizer->bos_token() + prompt));
  }
  if (line.contains("messages")) {
    if (!chat) {
      throw DataError(where + "\"messages\" need a chat template, and the tokenizer implies none; pass --template NAME");
    }
    std::vector<ChatMessage> messages;
    for (const json& m : line["messages"]) {
      if (!m.is_object() || !m.contains("role") || !m.contains("content") || !m["role"].is_string() ||
          !m["content"].is_string()) {
        throw DataError(where + "each message must be {\"role\": \"...\", \"content\": \"...\"}");
      }
      ChatMessage message{ChatRole::user, m["content"].get<std::string>()};
      if (!find_enum(m["role"].get<std::string>(), message.role)) {
        throw DataError(where + "role '" + m["role"].get<std::string>() + "' is not one of " + enum_choices<ChatRole>());
      }
      messages.push_back(std::move(message));
    }
    try {
      return encoded(chat->prompt_ids(messages));
    } catch (const std::invalid_argument& error) {
      throw DataError(where + error.what());
    }
  }
  throw DataError(where + "expected one of \"prompt_ids\", \"prompt\" or \"messages\"");
}

}  // namespace

std::vector<GenerationPrompt> read_generation_prompts(const std::string& path, const Tokenizer* tokenizer,
                                                      const ChatTemplate* chat, int64_t vocab_size,
                                                      int64_t max_prompt_tokens) {
  std::ifstream in(path);
  if (!in) throw DataError(path + ": cannot open the prompts file (--input)");
  std::vector<GenerationPrompt> prompts;
  std::string text;
  for (int64_t number = 1; std::getline(in, text); ++number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    const json line = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!line.is_object()) throw DataError(where + "not a JSON object; each line holds one prompt");
    GenerationPrompt prompt{prompt_ids(line, tokenizer, chat, where), line.value("id", json())};
    if (prompt.ids.empty()) throw DataError(where + "the prompt has no token");
    for (const int64_t id : prompt.ids) {
      if (id < 0 || id >= vocab_size) {
        throw DataError(where + "token id " + std::to_string(id) + " is outside the model's vocabulary [0, " +
                        std::to_string(vocab_size) + "); were the ids made with this model's tokenizer?");
      }
    }
    if (static_cast<int64_t>(prompt.ids.size()) > max_prompt_tokens) {
      throw DataError(where + "the prompt has " + std::to_string(prompt.ids.size()) + " tokens; with --max-new-tokens "
                      "it must fit max_position_embeddings (at most " + std::to_string(max_prompt_tokens) + ")");
    }
    prompts.push_back(std::move(prompt));
  }
  return prompts;
}

}  // namespace st

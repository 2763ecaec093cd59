// Chat templates by name, as LlamaFactory's `--template`: llama3, llama2, chatml (Qwen), plain.
// A prompt (messages) and a completion (the assistant's reply) are rendered and tokenized
// apart, so the prompt/completion boundary - where the loss mask starts - is exact. Special
// tokens are written as text and recognised by the tokenizer's added tokens (as transformers'
// apply_chat_template does). docs/data-format.md shows each rendering.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "util/enum_names.h"

namespace st {

struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
};

enum class TemplateKind { llama3, llama2, chatml, plain };
template <>
struct EnumNames<TemplateKind> {  // "qwen": another name of chatml (LlamaFactory's)
  static constexpr NamedValue<TemplateKind> table[] = {{TemplateKind::llama3, "llama3"},
                                                       {TemplateKind::llama2, "llama2"},
                                                       {TemplateKind::chatml, "chatml"},
                                                       {TemplateKind::chatml, "qwen"},
                                                       {TemplateKind::plain, "plain"}};
};

// The template a tokenizer's special tokens imply: llama3 (<|start_header_id|>, <|eot_id|>),
// chatml (<|im_start|>, <|im_end|>); nullopt when they tell nothing (llama2 and plain share
// <s>/</s> with other formats: name those).
std::optional<TemplateKind> detect_template(const Tokenizer& tokenizer);

class ChatTemplate {
 public:
  // Throws TokenizerError when the tokenizer lacks a special token the template writes (e.g.
  // llama3 on a tokenizer without <|eot_id|>), naming the token and the template.
  ChatTemplate(TemplateKind kind, const Tokenizer& tokenizer);

  // The prompt as text: the messages (system first if any, then alternating user / assistant,
  // ending with a user turn; or a system message alone, which the completion answers) and the
  // assistant's turn header. Throws std::invalid_argument with a short reason for a sequence the
  // template cannot render (e.g. one ending with an assistant turn).
  std::string render_prompt(const std::vector<ChatMessage>& messages) const;
  // The completion as text: the reply and the end of the assistant's turn.
  std::string render_completion(const std::string& reply) const;

  std::vector<int32_t> prompt_ids(const std::vector<ChatMessage>& messages) const;
  std::vector<int32_t> completion_ids(const std::string& reply) const;

 private:
  TemplateKind kind_;
  const Tokenizer& tokenizer_;
  std::string bos_, eos_;  // plain: the model's (tokenizer_config.json), possibly empty
};

}  // namespace st

#include "prep/prep_tokenizer.h"

#include "util/errors.h"

namespace st {

std::unique_ptr<PrepTokenizer> attach_tokenizer(PrepOptions& options, const std::string& path,
                                                std::optional<TemplateKind> named, const JinjaOptions& jinja,
                                                const std::string& command, const std::string& template_option) {
  auto made = std::unique_ptr<PrepTokenizer>(new PrepTokenizer{Tokenizer::from_file(path), std::nullopt, ""});
  const Tokenizer& tokenizer = made->tokenizer;
  std::optional<ChatTemplate> chosen = ChatTemplate::named_or_implied(named, tokenizer, jinja);
  if (!chosen) {
    throw ConfigError(command + ": " + tokenizer.source() + " has neither Llama 3's nor ChatML's special tokens; " +
                      std::string("name the chat format with ") + template_option + " " + enum_choices<TemplateKind>());
  }
  made->chat.emplace(std::move(*chosen));
  if (!named) made->auto_choice = std::string(enum_name(made->chat->kind())) + " (" + made->chat->chosen_because() + ")";
  options.chat = &*made->chat;
  options.info.tokenizer = path;
  options.info.chat_template = enum_name(made->chat->kind());
  if (options.vocab_size <= 0) options.vocab_size = tokenizer.vocab_size();
  // Recorded in the shards unless given: the model's own.
  if (options.info.bos_id < 0) options.info.bos_id = tokenizer.token_id(tokenizer.bos_token()).value_or(-1);
  if (options.info.eos_id < 0) options.info.eos_id = tokenizer.token_id(tokenizer.eos_token()).value_or(-1);
  return made;
}

}  // namespace st

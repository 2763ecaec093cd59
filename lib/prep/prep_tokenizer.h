// The model's tokenizer and chat template behind a prep of text records, chosen one way for
// `shardtune prep --tokenizer` and for the data `train` preps itself ([prep]).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "prep/prep.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/jinja_chat.h"
#include "tokenizer/tokenizer.h"

namespace st {

// Owns the tokenizer the template renders with; PrepOptions points at it, so it must outlive
// the prep and never move (it is held by unique_ptr).
struct PrepTokenizer {
  Tokenizer tokenizer;
  std::optional<ChatTemplate> chat;
  std::string auto_choice;  // "llama3 (why)" when the template was auto; empty when named
};

// Reads `path`'s tokenizer, picks the template (named, or auto: the model's own), and fills
// options' chat, vocabulary, tokenizer, chat_template and bos/eos (those not given). Throws
// ConfigError naming `command` and `template_option` when no template can be implied.
std::unique_ptr<PrepTokenizer> attach_tokenizer(PrepOptions& options, const std::string& path,
                                                std::optional<TemplateKind> named, const JinjaOptions& jinja,
                                                const std::string& command, const std::string& template_option);

}  // namespace st

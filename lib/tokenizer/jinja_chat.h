// A model's own Jinja chat_template rendering conversations as transformers' apply_chat_template
// does: the messages, tools and documents (None), add_generation_prompt, the tokenizer's
// special tokens (bos_token, eos_token, unk_token, pad_token ...) and any extra keyword the user gives (`--template-kwargs`, e.g.
// {"enable_thinking": false}), with strftime_now on the real date or a fixed one.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/template.h"
#include "tokenizer/tokenizer.h"

namespace st {

struct ChatMessage;

struct JinjaOptions {
  std::string kwargs_json;    // a JSON object of extra template variables; "" for none
  std::string date;           // YYYY-MM-DD: strftime_now's day (reproducible data); "" for today
  std::string template_file;  // a Jinja file to render instead of the tokenizer's chat_template
};

class JinjaChat {
 public:
  // Parses the tokenizer's chat_template. TokenizerError naming the file, the line and the
  // construct when it does not parse, when the tokenizer has none, or when the options are bad.
  JinjaChat(const Tokenizer& tokenizer, const JinjaOptions& options);
  // The conversation rendered; jinja::TemplateError (its line, the construct, or the template's
  // own raise_exception as jinja::TemplateRaised) when the template fails on it.
  jinja::RenderedText render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  bool has_generation() const { return template_.has_generation(); }
  const std::string& file() const { return file_; }

 private:
  // `source`: the template's text and its file.
  JinjaChat(const Tokenizer& tokenizer, const JinjaOptions& options, const std::pair<std::string, std::string>& source);

  jinja::Template template_;
  jinja::Dict variables_;  // everything but messages and add_generation_prompt
  jinja::RenderOptions options_;
  std::string file_;
};

}  // namespace st

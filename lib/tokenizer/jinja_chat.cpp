#include "tokenizer/jinja_chat.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>

#include "tokenizer/chat_template.h"
#include "util/errors.h"

namespace st {
namespace {

// The template's text and the file it came from: --template-file, else the tokenizer's.
std::pair<std::string, std::string> template_source(const Tokenizer& tokenizer, const JinjaOptions& options) {
  if (options.template_file.empty()) return {tokenizer.chat_template(), tokenizer.chat_template_file()};
  std::ifstream in(options.template_file, std::ios::binary);
  if (!in) throw TokenizerError("--template-file " + options.template_file + ": cannot be read; give a Jinja chat template file");
  return {std::string(std::istreambuf_iterator<char>(in), {}), options.template_file};
}

jinja::Template parsed(const std::pair<std::string, std::string>& source, const Tokenizer& tokenizer) {
  if (source.first.empty()) {
    throw TokenizerError(tokenizer.source() + ": template 'jinja' renders the model's own chat_template, but neither "
                         "tokenizer_config.json nor chat_template.jinja beside it has one; name a built-in template "
                         "(--template llama3|chatml|...)");
  }
  try {
    return jinja::Template(source.first);
  } catch (const jinja::TemplateError& e) {
    throw TokenizerError(source.second + ": chat_template " + e.located() +
                         "; fix the template or name a built-in one (--template)");
  }
}

}  // namespace

JinjaChat::JinjaChat(const Tokenizer& tokenizer, const JinjaOptions& options)
    : JinjaChat(tokenizer, options, template_source(tokenizer, options)) {}

JinjaChat::JinjaChat(const Tokenizer& tokenizer, const JinjaOptions& options,
                     const std::pair<std::string, std::string>& source)
    : template_(parsed(source, tokenizer)), file_(source.second) {
  variables_.set("tools", jinja::Value::none());
  variables_.set("documents", jinja::Value::none());
  variables_.set("bos_token", jinja::Value::of(tokenizer.bos_token()));
  variables_.set("eos_token", jinja::Value::of(tokenizer.eos_token()));
  for (const auto& [name, token] : tokenizer.special_tokens()) variables_.set(name, jinja::Value::of(token));
  if (!options.kwargs_json.empty()) {
    nlohmann::ordered_json kwargs;
    try {
      kwargs = nlohmann::ordered_json::parse(options.kwargs_json);
    } catch (const nlohmann::json::exception& e) {
      throw TokenizerError("--template-kwargs: not valid JSON (" + std::string(e.what()) +
                           "); give an object, e.g. '{\"enable_thinking\": false}'");
    }
    if (!kwargs.is_object()) throw TokenizerError("--template-kwargs: give a JSON object, e.g. '{\"enable_thinking\": false}'");
    for (const auto& [key, value] : kwargs.items()) {
      if (key == "messages" || key == "add_generation_prompt") {
        throw TokenizerError("--template-kwargs: '" + key + "' is set by shardtune per conversation; leave it out");
      }
      variables_.set(key, jinja::from_json(value));
    }
  }
  if (!options.date.empty()) {
    std::tm when{};
    const char* end = strptime(options.date.c_str(), "%Y-%m-%d", &when);
    if (end == nullptr || *end != '\0') {
      throw TokenizerError("--template-date '" + options.date + "': give the day as YYYY-MM-DD");
    }
    options_.fixed_time = when;
  }
}

jinja::RenderedText JinjaChat::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  jinja::List list;
  list.reserve(messages.size());
  for (const ChatMessage& m : messages) {
    jinja::Dict message;
    message.set("role", jinja::Value::of(std::string(enum_name(m.role))));
    message.set("content", jinja::Value::of(m.content));
    list.push_back(jinja::Value::of(std::move(message)));
  }
  jinja::Dict variables = variables_;
  variables.set("messages", jinja::Value::of(std::move(list)));
  variables.set("add_generation_prompt", jinja::Value::of(add_generation_prompt));
  return template_.render(variables, options_);
}

}  // namespace st

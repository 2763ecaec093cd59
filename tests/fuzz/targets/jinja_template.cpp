// A chat template from anywhere (a model repository is untrusted input): the whole input is the
// template's source, parsed and rendered over a small conversation with and without the
// generation prompt, under tight limits. A TemplateError (a syntax error, a failure, the
// template's raise_exception, a limit) is the documented refusal.
#include "fuzz_target.h"
#include "jinja/template.h"

namespace {

st::jinja::Dict conversation(bool add_generation_prompt) {
  using st::jinja::Value;
  auto message = [](const char* role, const char* content) {
    st::jinja::Dict m;
    m.set("role", Value::of(role));
    m.set("content", Value::of(content));
    return Value::of(std::move(m));
  };
  st::jinja::Dict variables;
  variables.set("messages", Value::of(st::jinja::List{message("system", "Be brief."), message("user", "Hi 🤗"),
                                                     message("assistant", "<think>\nx\n</think>\n\nHello!"),
                                                     message("user", "2+2?")}));
  variables.set("add_generation_prompt", Value::of(add_generation_prompt));
  variables.set("bos_token", Value::of("<s>"));
  variables.set("eos_token", Value::of("</s>"));
  variables.set("tools", Value::none());
  return variables;
}

}  // namespace

ST_FUZZ_TARGET(jinja_template) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  st::jinja::RenderOptions options;
  options.limits.max_steps = 200000;
  options.limits.max_depth = 150;
  options.limits.sizes.max_string_bytes = 1 << 20;
  options.limits.sizes.max_list_items = 10000;
  std::tm day{};
  day.tm_year = 124;
  day.tm_mday = 1;
  options.fixed_time = day;
  try {
    const st::jinja::Template parsed(source);
    for (const bool prompt : {true, false}) (void)parsed.render(conversation(prompt), options);
  } catch (const st::jinja::TemplateError& e) {
    return e.located();
  }
  return std::nullopt;
}

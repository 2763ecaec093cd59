// A Jinja2 chat template, parsed once and rendered per conversation, as transformers renders a
// model's `chat_template` (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
// loopcontrols, `{% generation %}`, raise_exception, strftime_now, json.dumps-style tojson).
// Templates are untrusted input: every failure is a TemplateError naming the line and the
// construct, and every rendering is bounded in steps, depth and size (RenderLimits).
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jinja/builtins.h"
#include "jinja/template_error.h"
#include "jinja/value.h"

namespace st::jinja {

struct Stmt;

struct RenderLimits {
  uint64_t max_steps = 10'000'000;  // expressions evaluated and statements run
  int max_depth = 600;              // nested evaluation: macro calls, blocks, expressions
  SizeLimits sizes;                 // any string (the output too) and any list
};

struct RenderOptions {
  // strftime_now's clock: this local time when set (reproducible data), else the machine's now.
  std::optional<std::tm> fixed_time;
  RenderLimits limits;
};

struct RenderedText {
  std::string text;
  // [begin, end) byte ranges of `text` written inside {% generation %} blocks, in order.
  std::vector<std::pair<size_t, size_t>> generation;
};

class Template {
 public:
  // Parses `source`; TemplateError (with the line) when it is not a template this reads.
  explicit Template(const std::string& source);
  // Renders with `variables` (messages, add_generation_prompt, bos_token, ... as the caller
  // passes them); the globals range, namespace, dict, raise_exception and strftime_now are added.
  RenderedText render(const Dict& variables, const RenderOptions& options = {}) const;
  // Whether the template has a {% generation %} block anywhere.
  bool has_generation() const { return has_generation_; }

 private:
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> body_;
  bool has_generation_ = false;
};

}  // namespace st::jinja

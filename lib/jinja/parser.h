// Jinja2's grammar, as far as chat templates use it (lib/jinja/README.md lists what is read):
// statements for/if/set/macro/call/filter/break/continue/generation and expressions with Jinja's
// precedence. Throws TemplateError with the line for anything else (include, extends, import,
// a tag left open), and past kMaxNesting levels of nesting.
#pragma once

#include <string>

#include "jinja/ast.h"

namespace st::jinja {

constexpr int kMaxNesting = 128;

Body parse_template(const std::string& source);

}  // namespace st::jinja

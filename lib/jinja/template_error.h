// What a template does wrong: a syntax error, a failing operation (an unknown filter, `+` on
// Undefined, a mutating call the sandbox forbids), a limit crossed, or the template's own
// raise_exception(...). Each carries the template line where it happened (0 until known).
#pragma once

#include <stdexcept>
#include <string>

namespace st::jinja {

class TemplateError : public std::runtime_error {
 public:
  explicit TemplateError(const std::string& message, int line = 0)
      : std::runtime_error(message), message_(message), line_(line) {}
  const std::string& message() const { return message_; }
  int line() const { return line_; }
  void set_line_if_unknown(int line) {
    if (line_ == 0) line_ = line;
  }
  // "line 12: unknown filter 'frobnicate'".
  std::string located() const { return line_ > 0 ? "line " + std::to_string(line_) + ": " + message_ : message_; }

 private:
  std::string message_;
  int line_;
};

// raise_exception("...") in the template: the template refuses its input, with its own words.
class TemplateRaised : public TemplateError {
 public:
  using TemplateError::TemplateError;
};

}  // namespace st::jinja

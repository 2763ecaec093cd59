// Expressions of a tag, with Jinja2's precedence (or, and, not, comparisons, + -, ~, * / // %,
// **, unary, postfix . [] (), filters and tests), for the statement parser (parser.cpp).
// Internal to lib/jinja.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"
#include "jinja/template_error.h"

namespace st::jinja {

// One tag's tokens, read left to right.
class TokenReader {
 public:
  explicit TokenReader(const std::vector<Token>& tokens) : tokens_(tokens) {}
  const Token& peek(size_t ahead = 0) const { return tokens_[std::min(at_ + ahead, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& t = peek();
    if (at_ < tokens_.size() - 1) ++at_;
    return t;
  }
  bool is_op(const char* op, size_t ahead = 0) const { return peek(ahead).kind == TokenKind::op && peek(ahead).text == op; }
  bool is_name(const char* name, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::name && peek(ahead).text == name;
  }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(std::string("expected '") + op + "'");
  }
  std::string expect_name() {
    if (peek().kind != TokenKind::name) fail("expected a name");
    return next().text;
  }
  bool at_end() const { return peek().kind == TokenKind::end; }
  void expect_end() {
    if (!at_end()) fail("unexpected '" + peek().text + "'");
  }
  [[noreturn]] void fail(const std::string& what) const {
    const Token& t = peek();
    const std::string found = t.kind == TokenKind::end ? "the end of the tag" : "'" + t.text + "'";
    throw TemplateError(what + ", found " + found, t.line);
  }

 private:
  const std::vector<Token>& tokens_;
  size_t at_ = 0;
};

// An expression with inline if (`a if b else c`).
ExprPtr parse_expression(TokenReader& in);
// A comma-separated run without brackets (`for a, b in`, `set x = 1, 2`): a tuple if more than
// one; without `conditional`, an `if` ends it (a for loop's filter: `for x in l if x`).
ExprPtr parse_tuple_or_expression(TokenReader& in, bool conditional = true);
// A filter after its '|': its name and arguments, applied to `subject` (null in a filter block).
ExprPtr parse_filter(TokenReader& in, ExprPtr subject);

}  // namespace st::jinja

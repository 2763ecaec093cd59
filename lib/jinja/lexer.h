// Cuts a template's source into text, `{{ expression }}` and `{% statement %}` segments, each
// statement or expression as tokens, with the whitespace rules transformers renders under:
// `-` markers strip all whitespace beside a tag, trim_blocks drops the newline after a block tag,
// lstrip_blocks the spaces before one on its line; newlines are normalized to \n and one trailing
// newline dropped (Jinja2's keep_trailing_newline false); comments and `{% raw %}` handled here.
#pragma once

#include <string>
#include <vector>

namespace st::jinja {

enum class TokenKind { name, string, integer, floating, op, end };

struct Token {
  TokenKind kind = TokenKind::end;
  std::string text;  // a name, the operator, the unescaped string, the digits of a number
  int line = 0;
};

enum class SegmentKind { text, expression, statement };

struct Segment {
  SegmentKind kind = SegmentKind::text;
  std::string text;           // text segments
  std::vector<Token> tokens;  // expression and statement segments, ending with TokenKind::end
  int line = 0;
};

// Throws TemplateError (with the line) on an unclosed tag, comment or string, or a character
// that starts no token.
std::vector<Segment> lex_template(const std::string& source);

}  // namespace st::jinja

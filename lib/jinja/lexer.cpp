#include "jinja/lexer.h"

#include <cctype>

#include "jinja/template_error.h"
#include "jinja/utf8_text.h"

namespace st::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Jinja2 runs the source through str.splitlines-like \r\n|\r|\n -> \n and drops one final "\n".
std::string normalized(const std::string& source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

void append_utf8(std::string& out, uint32_t cp) { out += encode_utf8(std::u32string(1, static_cast<char32_t>(cp))); }

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}

  std::vector<Segment> run() {
    bool strip_next = false;      // the previous tag ended with '-'
    bool trim_newline = false;    // the previous tag was a block or comment (trim_blocks)
    bool line_starting = true;    // what precedes the next text ends a line (lstrip_blocks)
    while (pos_ <= src_.size()) {
      const size_t tag = next_tag(pos_);
      std::string text = src_.substr(pos_, (tag == std::string::npos ? src_.size() : tag) - pos_);
      const int text_line = line_;
      count_lines(pos_, tag == std::string::npos ? src_.size() : tag);
      if (strip_next) {
        size_t from = 0;
        while (from < text.size() && is_space(text[from])) ++from;
        text.erase(0, from);
      } else if (trim_newline && !text.empty() && text[0] == '\n') {
        text.erase(0, 1);
      }
      if (tag == std::string::npos) {
        push_text(std::move(text), text_line);
        break;
      }
      const char kind = src_[tag + 1];  // '{', '%' or '#'
      const char marker = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (marker == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (kind != '{' && marker != '+') {
        // lstrip_blocks: spaces and tabs between the line's start and a block or comment tag.
        const size_t newline = text.rfind('\n');
        const size_t line_start = newline == std::string::npos ? 0 : newline + 1;
        if (newline != std::string::npos || line_starting) {
          if (text.find_first_not_of(" \t", line_start) == std::string::npos) text.erase(line_start);
        }
      }
      push_text(std::move(text), text_line);
      pos_ = tag + 2 + ((marker == '-' || marker == '+') ? 1 : 0);
      char end_marker = '\0';
      if (kind == '#') {
        end_marker = skip_comment(tag);
      } else {
        Segment segment;
        segment.kind = kind == '{' ? SegmentKind::expression : SegmentKind::statement;
        segment.line = line_;
        end_marker = lex_tokens(segment, kind == '{' ? '}' : '%', tag);
        if (segment.kind == SegmentKind::statement && segment.tokens.size() == 2 &&
            segment.tokens[0].kind == TokenKind::name && segment.tokens[0].text == "raw") {
          end_marker = lex_raw(end_marker);
        } else {
          segments_.push_back(std::move(segment));
        }
      }
      strip_next = end_marker == '-';
      trim_newline = kind != '{' && end_marker != '+';
      // Jinja2 counts a block tag whose trimmed newline it consumed as ending a line.
      line_starting = trim_newline && pos_ < src_.size() && src_[pos_] == '\n';
    }
    return std::move(segments_);
  }

 private:
  size_t next_tag(size_t from) const {
    for (size_t at = src_.find('{', from); at != std::string::npos; at = src_.find('{', at + 1)) {
      if (at + 1 < src_.size() && (src_[at + 1] == '{' || src_[at + 1] == '%' || src_[at + 1] == '#')) return at;
    }
    return std::string::npos;
  }

  void count_lines(size_t from, size_t to) {
    for (size_t i = from; i < to && i < src_.size(); ++i) line_ += src_[i] == '\n';
  }

  void push_text(std::string text, int line) {
    if (text.empty()) return;
    Segment segment;
    segment.text = std::move(text);
    segment.line = line;
    segments_.push_back(std::move(segment));
  }

  // Returns the end tag's marker ('-', '+' or '\0') and moves past the tag.
  char skip_comment(size_t tag) {
    const size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) throw TemplateError("unclosed comment: '{#' without '#}'", line_);
    count_lines(tag, end + 2);
    const char marker = end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : '\0';
    pos_ = end + 2;
    return marker;
  }

  // {% raw %}...{% endraw %}: the text between, as it stands.
  char lex_raw(char end_marker) {
    size_t search = pos_;
    while (true) {
      const size_t at = src_.find("{%", search);
      if (at == std::string::npos) throw TemplateError("'{% raw %}' without '{% endraw %}'", line_);
      size_t i = at + 2;
      const bool strip_before = i < src_.size() && src_[i] == '-';
      if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
      while (i < src_.size() && is_space(src_[i])) ++i;
      if (src_.compare(i, 6, "endraw") != 0) {
        search = at + 2;
        continue;
      }
      i += 6;
      while (i < src_.size() && is_space(src_[i])) ++i;
      char marker = '\0';
      if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) marker = src_[i++];
      if (src_.compare(i, 2, "%}") != 0) throw TemplateError("malformed '{% endraw %}'", line_);
      std::string text = src_.substr(pos_, at - pos_);
      if (end_marker == '-') text.erase(0, text.find_first_not_of(" \t\n\r\v\f") == std::string::npos
                                                 ? text.size()
                                                 : text.find_first_not_of(" \t\n\r\v\f"));
      if (strip_before) {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      }
      push_text(std::move(text), line_);
      count_lines(pos_, i + 2);
      pos_ = i + 2;
      return marker;
    }
  }

  // Tokens up to the tag's end ("}}" or "%}", with an optional '-' or '+' before it) outside
  // brackets and strings; returns the end marker.
  char lex_tokens(Segment& segment, char closer, size_t tag) {
    int depth = 0;
    const int tag_line = line_;
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) {
        line_ += src_[pos_] == '\n';
        ++pos_;
      }
      if (pos_ >= src_.size()) {
        throw TemplateError(std::string("unclosed tag: '") + src_.substr(tag, 2) + "' without '" + closer + "}'",
                            tag_line);
      }
      const char c = src_[pos_];
      if (depth == 0) {
        for (const char marker : {'-', '+', '\0'}) {
          const size_t at = pos_ + (marker ? 1 : 0);
          if ((marker == '\0' || c == marker) && src_.compare(at, 2, std::string(1, closer) + "}") == 0) {
            if (marker == '+' && closer == '}') continue;
            pos_ = at + 2;
            segment.tokens.push_back({TokenKind::end, "", line_});
            return marker;
          }
        }
      }
      Token token;
      token.line = line_;
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        const size_t start = pos_;
        while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_;
        token = {TokenKind::name, src_.substr(start, pos_ - start), line_};
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        token = lex_number();
      } else if (c == '\'' || c == '"') {
        token = lex_string(c);
      } else {
        static const char* const two[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string op(1, c);
        for (const char* candidate : two) {
          if (src_.compare(pos_, 2, candidate) == 0) op = candidate;
        }
        if (op.size() == 1 && std::string("+-*/%~<>=.,:|()[]{}").find(c) == std::string::npos) {
          throw TemplateError(std::string("unexpected character '") + c + "' in a tag", line_);
        }
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        pos_ += op.size();
        token = {TokenKind::op, op, line_};
      }
      segment.tokens.push_back(std::move(token));
    }
  }

  Token lex_number() {
    const size_t start = pos_;
    std::string digits;
    auto take_digits = [&] {
      while (pos_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) {
        if (src_[pos_] != '_') digits += src_[pos_];
        ++pos_;
      }
    };
    take_digits();
    bool floating = false;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
      floating = true;
      digits += src_[pos_++];
      take_digits();
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t at = pos_ + 1;
      if (at < src_.size() && (src_[at] == '+' || src_[at] == '-')) ++at;
      if (at < src_.size() && std::isdigit(static_cast<unsigned char>(src_[at]))) {
        floating = true;
        digits += src_.substr(pos_, at - pos_);
        pos_ = at;
        take_digits();
      }
    }
    (void)start;
    return {floating ? TokenKind::floating : TokenKind::integer, digits, line_};
  }

  // A string literal with Python's escapes (Jinja2 decodes them as unicode-escape); a backslash
  // before a newline joins the lines.
  Token lex_string(char quote) {
    const int start_line = line_;
    std::string out;
    ++pos_;
    while (true) {
      if (pos_ >= src_.size()) throw TemplateError("unclosed string literal", start_line);
      const char c = src_[pos_++];
      if (c == quote) break;
      line_ += c == '\n';
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= src_.size()) throw TemplateError("unclosed string literal", start_line);
      const char e = src_[pos_++];
      switch (e) {
        case '\n': ++line_; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t width = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (pos_ + width > src_.size()) throw TemplateError(std::string("truncated \\") + e + " escape", line_);
          uint32_t cp = 0;
          for (size_t k = 0; k < width; ++k) {
            const char h = src_[pos_ + k];
            if (!std::isxdigit(static_cast<unsigned char>(h))) {
              throw TemplateError(std::string("truncated \\") + e + " escape", line_);
            }
            cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0'
                                                                                               : std::tolower(h) - 'a' + 10);
          }
          if (cp > 0x10ffff) throw TemplateError(std::string("illegal \\") + e + " escape", line_);
          pos_ += width;
          append_utf8(out, cp);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7'; ++k) {
              cp = cp * 8 + static_cast<uint32_t>(src_[pos_++] - '0');
            }
            append_utf8(out, cp);
          } else {
            out += '\\';  // Python keeps an unknown escape as written
            out += e;
            line_ += e == '\n';
          }
      }
    }
    return {TokenKind::string, out, start_line};
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Segment> segments_;
};

}  // namespace

std::vector<Segment> lex_template(const std::string& source) { return Lexer(normalized(source)).run(); }

}  // namespace st::jinja

// Python's view of a UTF-8 string: code points, so that len(), s[i] and s[a:b] count characters
// as a template running under Python does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace st::jinja {

// Code points of `text`; an invalid byte stands for itself (U+DC80 + byte, as Python's
// surrogateescape would) so that a round trip keeps the bytes.
std::u32string decode_utf8(const std::string& text);
std::string encode_utf8(const std::u32string& code_points);
size_t code_point_count(const std::string& text);
bool is_ascii(const std::string& text);

// Python's str.isspace() for one code point (ASCII whitespace, \x1c-\x1f, \x85, \xa0, the Unicode
// spaces), which strip(), split() and trim use.
bool is_python_space(char32_t c);
// str.splitlines(): \n, \r\n, \r, \v, \f, \x1c-\x1e, \x85, U+2028, U+2029 end a line.
std::vector<std::string> split_lines(const std::string& text);

}  // namespace st::jinja

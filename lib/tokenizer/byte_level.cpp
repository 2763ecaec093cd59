#include "tokenizer/byte_level.h"

#include <array>

namespace st {
namespace {

void append_utf8(std::string& out, unsigned codepoint) {
  if (codepoint < 0x80) {
    out += static_cast<char>(codepoint);
  } else {  // the table's code points are all below 0x800
    out += static_cast<char>(0xC0 | (codepoint >> 6));
    out += static_cast<char>(0x80 | (codepoint & 0x3F));
  }
}

// Printable Latin-1 bytes stand for themselves; the other 68 get 256, 257, ... in byte order.
const std::array<std::string, 256>& byte_table() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    unsigned next = 256;
    for (unsigned b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      append_utf8(t[b], printable ? b : next++);
    }
    return t;
  }();
  return table;
}

}  // namespace

std::string byte_level_encode(std::string_view bytes) {
  const auto& table = byte_table();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) out += table[static_cast<unsigned char>(c)];
  return out;
}

std::string byte_level_decode(std::string_view text) {
  const auto& table = byte_table();
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t length = (static_cast<unsigned char>(text[at]) & 0xE0) == 0xC0 ? 2 : 1;
    const std::string_view symbol = text.substr(at, length);
    bool found = false;
    for (unsigned b = 0; b < 256 && !found; ++b) {
      if (table[b] == symbol) {
        out += static_cast<char>(b);
        found = true;
      }
    }
    if (!found) out += symbol;
    at += length;
  }
  return out;
}

}  // namespace st

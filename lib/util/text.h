// Prefix and suffix tests on strings (std::string gains them only in C++20), trimming, and sizes
// as messages write them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace st {

inline bool starts_with(const std::string& text, const std::string& prefix) {
  return text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
}

inline bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// `text` without the `blanks` at either end ("" when it holds nothing else).
inline std::string trimmed(const std::string& text, const char* blanks = " \t\r\n") {
  const size_t first = text.find_first_not_of(blanks);
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(blanks) - first + 1);
}

// `bytes` as "12.34 GiB".
inline std::string gib_text(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

}  // namespace st

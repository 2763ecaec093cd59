// Prefix and suffix tests on strings (std::string gains them only in C++20), trimming, comma
// lists and the numbers in them, and sizes as messages write them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

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

// "a, b ,c" -> {"a", "b", "c"}: the items of a comma list, trimmed, empty ones left out.
inline std::vector<std::string> comma_items(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    item = trimmed(item);
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

// `text` as a number when all of it reads as one (std::stod's forms), else none.
inline std::optional<double> whole_number(const std::string& text) {
  size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != text.size()) return std::nullopt;
  return value;
}

// `bytes` as "12.34 GiB".
inline std::string gib_text(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

}  // namespace st

#include "prep/json_array.h"

#include <algorithm>

#include "util/errors.h"

namespace st {
namespace {

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

}  // namespace

bool starts_json_array(std::istream& in) {
  char c = 0;
  while (in.get(c) && blank(c)) {
  }
  return in && c == '[';
}

std::vector<TextRecord> json_array_records(const std::string& text, const std::string& path) {
  std::vector<TextRecord> records;
  uint64_t line = 1;
  size_t i = text.find_first_not_of(" \t\r\n");
  line += static_cast<uint64_t>(std::count(text.begin(), text.begin() + static_cast<int64_t>(std::min(i, text.size())), '\n'));
  auto fail = [&](const std::string& what) {
    return DataError(path + ":" + std::to_string(line) + ": " + what + " (a JSON array of records was expected)");
  };
  if (i == std::string::npos || text[i] != '[') throw fail("the text does not start with '['");
  ++i;
  bool expect_element = true;  // after '[' or ','
  while (true) {
    while (i < text.size() && blank(text[i])) line += text[i++] == '\n';
    if (i == text.size()) throw fail("the array is not closed with ']'");
    if (text[i] == ']') {
      if (expect_element && !records.empty()) throw fail("a ',' before ']'");
      ++i;
      break;
    }
    if (!expect_element) {
      if (text[i] != ',') throw fail("expected ',' or ']' between records");
      ++i;
      expect_element = true;
      continue;
    }
    // One element: a container or string up to its close, or a scalar up to ',' / ']' / blank.
    const size_t begin = i;
    const uint64_t first_line = line;
    int depth = 0;
    bool in_string = false;
    for (; i < text.size(); ++i) {
      const char c = text[i];
      if (c == '\n') ++line;
      if (in_string) {
        if (c == '\\') {
          if (++i < text.size() && text[i] == '\n') ++line;  // an escape takes the next character, whatever it is
        } else if (c == '"') {
          in_string = false;
          if (depth == 0) {
            ++i;
            break;
          }
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (depth == 0) break;
        if (--depth == 0) {
          ++i;
          break;
        }
      } else if (depth == 0 && (c == ',' || blank(c))) {
        break;
      }
    }
    i = std::min(i, text.size());  // an escape at the very end steps past it
    size_t end = i;
    while (end > begin && blank(text[end - 1])) --end;
    records.push_back({first_line, text.substr(begin, end - begin)});
    expect_element = false;
  }
  if (text.find_first_not_of(" \t\r\n", i) != std::string::npos) throw fail("text after the closing ']'");
  return records;
}

}  // namespace st

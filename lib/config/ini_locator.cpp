// Line scanning with the same rules as Boost's config-file parser: '#' starts a comment,
// "[section]" prefixes the following keys with "section.".
#include "config/ini_locator.h"

#include <fstream>

#include "util/text.h"

namespace st {
namespace {

std::string strip_comment(const std::string& text) { return text.substr(0, text.find('#')); }

}  // namespace

std::optional<IniLocation> locate_ini_key(const std::string& path, const std::string& dotted_name) {
  std::ifstream in(path);
  std::string line;
  std::string section;
  std::optional<IniLocation> found;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string text = trimmed(strip_comment(line));
    if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
      section = trimmed(text.substr(1, text.size() - 2));
      continue;
    }
    const auto equals = text.find('=');
    if (equals == std::string::npos) continue;
    const std::string key = trimmed(text.substr(0, equals));
    const std::string name = section.empty() ? key : section + "." + key;
    if (name == dotted_name) found = IniLocation{number, trimmed(text.substr(equals + 1))};
  }
  return found;
}

std::optional<int> locate_ini_line(const std::string& path, const std::string& text) {
  std::ifstream in(path);
  std::string line;
  const std::string wanted = trimmed(text);
  for (int number = 1; std::getline(in, line); ++number) {
    if (trimmed(line) == wanted || trimmed(strip_comment(line)) == wanted) return number;
  }
  return std::nullopt;
}

}  // namespace st

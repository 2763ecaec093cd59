// Finds where a key or line sits in an INI file, so that errors Boost reports by option name
// can name file:line. Only used on the error path; parsing itself is Boost's.
#pragma once

#include <optional>
#include <string>

namespace st {

struct IniLocation {
  int line = 0;           // 1-based
  std::string raw_value;  // text after '=', trimmed, comment removed
};

// The last assignment of `dotted_name` ("optim.lr" = key lr in [optim]) in `path`.
std::optional<IniLocation> locate_ini_key(const std::string& path, const std::string& dotted_name);
// The first line of `path` whose trimmed text equals `text`.
std::optional<int> locate_ini_line(const std::string& path, const std::string& text);

}  // namespace st

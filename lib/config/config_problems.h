// Collects every problem of a configuration before throwing, so a user fixes them in one go:
// "invalid configuration (2 problems):\n  - optim.lr = -1 (run.ini:7) must be > 0\n  - ...".
#pragma once

#include <string>
#include <vector>

#include "config/config_schema.h"

namespace st {

class ConfigProblems {
 public:
  explicit ConfigProblems(const ConfigOrigins& origins) : origins_(origins) {}

  // Records "name = value (origin) rule" when `ok` is false.
  template <typename T>
  void require(bool ok, const std::string& name, const T& value, const std::string& rule) {
    if (!ok) lines_.push_back(name + " = " + format_config_value(value) + where(name) + " " + rule);
  }
  void add(const std::string& line) { lines_.push_back(line); }
  // " (run.ini:7)", " (command line)" or " (default)".
  std::string where(const std::string& name) const;
  void add_all(const std::vector<std::string>& lines) { lines_.insert(lines_.end(), lines.begin(), lines.end()); }
  const std::vector<std::string>& lines() const { return lines_; }
  // Throws one ConfigError with every recorded line.
  void throw_if_any() const;

 private:
  const ConfigOrigins& origins_;
  std::vector<std::string> lines_;
};

}  // namespace st

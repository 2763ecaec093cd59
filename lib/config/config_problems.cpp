#include "config/config_problems.h"

#include "util/errors.h"

namespace st {

std::string ConfigProblems::where(const std::string& name) const {
  const auto found = origins_.find(name);
  return found == origins_.end() ? std::string(" (default)") : " (" + found->second + ")";
}

void ConfigProblems::throw_if_any() const {
  if (lines_.empty()) return;
  std::string message = "invalid configuration (" + std::to_string(lines_.size()) +
                        (lines_.size() == 1 ? " problem" : " problems") + "):";
  for (const auto& line : lines_) message += "\n  - " + line;
  throw ConfigError(message);
}

}  // namespace st

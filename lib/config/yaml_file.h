// A YAML config file of another tool (LlamaFactory's training YAML, TRL's --config): its
// top-level keys in file order, each value as text, read by yaml-cpp.
#pragma once

#include <string>
#include <vector>

namespace st {

// One key as the user wrote it. A list is its items joined by ", "; null is empty; a nested
// mapping (TRL's `*_kwargs`) is one setting per leaf, named parent.child; TRL's `env` mapping is
// NAME=value items joined by ", ".
struct YamlSetting {
  std::string key;
  std::string value;
  bool null = false;   // `key:` or `key: null` (the tool's default applies)
  int line = 0;        // 1-based
};

// Throws ConfigError naming the file (and line) for a file that cannot be read or parsed, a
// top level that is not a mapping, a repeated key, or a list holding mappings.
std::vector<YamlSetting> read_yaml_settings(const std::string& path);

// Whether `path` names a YAML file (.yaml or .yml).
bool is_yaml_path(const std::string& path);

}  // namespace st

#include "config/yaml_file.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include "util/errors.h"
#include "util/text.h"

namespace st {
namespace {

std::string where(const std::string& path, const YAML::Mark& mark) {
  return path + (mark.line >= 0 ? ":" + std::to_string(mark.line + 1) : std::string());
}

std::string scalar_text(const YAML::Node& node, const std::string& path, const std::string& key) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsSequence()) {
    std::string joined;
    for (const YAML::Node& item : node) {
      if (!item.IsScalar()) {
        throw ConfigError(where(path, item.Mark()) + ": " + key + " lists something other than plain values; " +
                          "write its items as text or numbers");
      }
      joined += (joined.empty() ? "" : ", ") + item.Scalar();
    }
    return joined;
  }
  if (key == "env") {  // TRL's environment variables: NAME=value, ...
    std::string joined;
    for (const auto& item : node) {
      if (!item.second.IsScalar()) break;
      joined += (joined.empty() ? "" : ", ") + item.first.as<std::string>() + "=" + item.second.Scalar();
    }
    return joined;
  }
  throw ConfigError(where(path, node.Mark()) + ": " + key + " holds a nested mapping where a value belongs");
}

// A mapping under `key` (TRL's gradient_checkpointing_kwargs, lr_scheduler_kwargs, ...): one
// setting per leaf, named key.child (key.child.grandchild), at its own line.
void add_settings(const std::string& key, const YAML::Node& value, int line, const std::string& path,
                  std::vector<YamlSetting>& settings) {
  if (value.IsMap() && key != "env") {
    for (const auto& item : value) {
      add_settings(key + "." + item.first.as<std::string>(), item.second, item.first.Mark().line + 1, path, settings);
    }
    return;
  }
  YamlSetting setting{key, "", value.IsNull(), line};
  if (!setting.null) setting.value = scalar_text(value, path, key);
  settings.push_back(std::move(setting));
}

}  // namespace

bool is_yaml_path(const std::string& path) { return ends_with(path, ".yaml") || ends_with(path, ".yml"); }

std::vector<YamlSetting> read_yaml_settings(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    throw ConfigError(path + ": cannot open config file (" + std::strerror(errno) + "). Check the --config path.");
  }
  YAML::Node root;
  try {
    root = YAML::Load(file);
  } catch (const YAML::Exception& error) {
    throw ConfigError(where(path, error.mark) + ": not valid YAML (" + error.msg + ")");
  }
  std::vector<YamlSetting> settings;
  if (root.IsNull()) return settings;  // an empty file: every default
  if (!root.IsMap()) {
    throw ConfigError(path + ": the top level is not a mapping of keys (key: value lines), as LlamaFactory and TRL "
                      "configs are");
  }
  std::set<std::string> seen;
  for (const auto& item : root) {
    const std::string key = item.first.as<std::string>();
    const int line = item.first.Mark().line + 1;
    if (!seen.insert(key).second) {
      throw ConfigError(path + ":" + std::to_string(line) + ": " + key + " is set more than once; keep one");
    }
    add_settings(key, item.second, line, path, settings);
  }
  return settings;
}

}  // namespace st

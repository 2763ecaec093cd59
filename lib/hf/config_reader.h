// ConfigReader: config.json's fields read with errors that name the file (with the part read,
// e.g. "(text_config)"), the field and what it must be. model_config.cpp and the hybrids' part
// (gated_delta_config.cpp) read through it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "util/enum_names.h"
#include "util/errors.h"

namespace st {

class ConfigReader {
 public:
  using json = nlohmann::json;
  ConfigReader(const json& root, std::string source) : root_(root), source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw ModelError(source_ + ": field '" + field + "' " + problem);
  }

  bool has(const json& object, const std::string& key) const {
    return object.contains(key) && !object.at(key).is_null();
  }
  bool has(const std::string& key) const { return has(root_, key); }

  int64_t integer(const json& object, const std::string& key, const std::string& path) const {
    const json& value = object.at(key);
    if (!value.is_number_integer()) fail(path, "must be an integer, got " + value.dump());
    return value.get<int64_t>();
  }
  int64_t positive(const std::string& key) const {
    if (!has(key)) fail(key, "is missing; every Llama config.json has it");
    const int64_t value = integer(root_, key, key);
    if (value <= 0) fail(key, "must be > 0, got " + std::to_string(value));
    return value;
  }
  int64_t positive_or(const std::string& key, int64_t fallback) const {
    return has(key) ? positive(key) : fallback;
  }
  double number(const json& object, const std::string& key, const std::string& path) const {
    const json& value = object.at(key);
    if (!value.is_number()) fail(path, "must be a number, got " + value.dump());
    return value.get<double>();
  }
  double number_or(const std::string& key, double fallback) const {
    return has(key) ? number(root_, key, key) : fallback;
  }
  // `path` names the field in messages (e.g. "quantization_config.load_in_4bit").
  bool boolean_or(const json& object, const std::string& key, const std::string& path, bool fallback) const {
    if (!has(object, key)) return fallback;
    if (!object.at(key).is_boolean()) fail(path, "must be true or false, got " + object.at(key).dump());
    return object.at(key).get<bool>();
  }
  bool boolean_or(const std::string& key, bool fallback) const { return boolean_or(root_, key, key, fallback); }
  std::string string_or(const json& object, const std::string& key, const std::string& path,
                        const std::string& fallback) const {
    if (!has(object, key)) return fallback;
    if (!object.at(key).is_string()) fail(path, "must be a string, got " + object.at(key).dump());
    return object.at(key).get<std::string>();
  }
  std::string string_or(const std::string& key, const std::string& fallback) const {
    return string_or(root_, key, key, fallback);
  }
  // `key`'s list of one word of Enum's table per layer (config.json's layer_types).
  template <typename Enum>
  std::vector<Enum> per_layer(const std::string& key, size_t layers) const {
    const json& words = root_.at(key);
    if (!words.is_array() || words.size() != layers) {
      fail(key, "must list one of " + enum_choices<Enum>() + " per layer (" + std::to_string(layers) + ")");
    }
    std::vector<Enum> kinds;
    for (const json& word : words) {
      Enum kind{};
      if (!word.is_string() || !find_enum(word.get<std::string>(), kind)) {
        fail(key, "holds " + word.dump() + "; expected " + enum_choices<Enum>());
      }
      kinds.push_back(kind);
    }
    return kinds;
  }
  const json& root() const { return root_; }

 private:
  const json& root_;
  std::string source_;
};

}  // namespace st

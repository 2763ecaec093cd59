// Value formatting and the Boost option descriptions behind a ConfigSchema.
#include "config/config_schema.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "config/config_problems.h"

namespace st {

std::string format_config_value(double value) {
  // Whole numbers read best without an exponent ("1800", not "1.8e+03").
  if (value == static_cast<double>(static_cast<int64_t>(value)) && std::abs(value) < 1e15) {
    return std::to_string(static_cast<int64_t>(value));
  }
  char text[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof(text), "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}
std::string format_config_value(int64_t value) { return std::to_string(value); }
std::string format_config_value(uint64_t value) { return std::to_string(value); }
std::string format_config_value(bool value) { return value ? "true" : "false"; }
std::string format_config_value(const std::string& value) { return value; }

namespace {
std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string joined;
  for (const auto& item : items) joined += (joined.empty() ? "" : separator) + item;
  return joined;
}
}  // namespace

void ConfigSchema::section(const std::string& name, const std::string& title) {
  section_names_.push_back(name);
  sections_.emplace_back("[" + name + "] " + title, 110, 55);
}

void ConfigSchema::append(ConfigField entry, const po::value_semantic* semantic) {
  std::string description = entry.help;
  if (!entry.choices.empty()) description += "; one of " + join(entry.choices, "|");
  sections_.back().add_options()(entry.name().c_str(), semantic, description.c_str());
  fields_.push_back(std::move(entry));
}

void ConfigSchema::apply_enum_words(const ConfigOrigins& origins) {
  ConfigProblems problems(origins);
  for (const EnumWord& word : enum_words_) {
    if (word.apply(*word.text)) continue;
    problems.require(false, word.name, *word.text, "is not one of " + join(find(word.name)->choices, "|"));
  }
  problems.throw_if_any();
}

const ConfigField* ConfigSchema::find(const std::string& name) const {
  for (const auto& field : fields_) {
    if (field.name() == name) return &field;
  }
  return nullptr;
}

po::options_description ConfigSchema::all_options() const {
  po::options_description all;
  for (const auto& section : sections_) all.add(section);
  return all;
}

}  // namespace st

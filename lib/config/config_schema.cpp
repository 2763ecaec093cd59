// Value formatting and the Boost option descriptions behind a ConfigSchema.
#include "config/config_schema.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "config/config_problems.h"

namespace st {

std::string format_config_value(double value) {
  // Whole numbers read best without an exponent ("1800", not "1.8e+03").
  // (The range first: casting a double past int64 is undefined.)
  if (std::abs(value) < 1e15 && value == std::trunc(value)) {
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

KeyRule KeyRule::unit(std::string text) const {
  KeyRule copy = *this;
  copy.unit_text = std::move(text);
  return copy;
}

KeyRule KeyRule::choices(std::vector<std::string> allowed) const {
  KeyRule copy = *this;
  copy.words = std::move(allowed);
  return copy;
}

KeyRule KeyRule::lists(std::string items, std::string example) const {
  KeyRule copy = *this;
  copy.list_items = std::move(items);
  copy.list_example = std::move(example);
  return copy;
}

KeyRule KeyRule::meaning(std::string special_values) const {
  KeyRule copy = *this;
  copy.special = std::move(special_values);
  return copy;
}

bool KeyRule::admits(double value) const {
  if (min && (min_open ? value <= *min : value < *min)) return false;
  if (max && (max_open ? value >= *max : value > *max)) return false;
  return true;
}

std::string KeyRule::range_text() const {
  if (min && max) {
    return "in " + std::string(min_open ? "(" : "[") + format_config_value(*min) + ", " + format_config_value(*max) +
           (max_open ? ")" : "]");
  }
  if (min) return (min_open ? "> " : ">= ") + format_config_value(*min);
  if (max) return (max_open ? "< " : "<= ") + format_config_value(*max);
  return "";
}

KeyRule any_value() { return {}; }

KeyRule above(double bound) {
  KeyRule rule;
  rule.min = bound;
  rule.min_open = true;
  return rule;
}

KeyRule at_least(double bound) {
  KeyRule rule;
  rule.min = bound;
  return rule;
}

KeyRule within(double low, double high, bool high_open) {
  KeyRule rule;
  rule.min = low;
  rule.max = high;
  rule.max_open = high_open;
  return rule;
}

void ConfigSchema::section(const std::string& name, const std::string& title) {
  section_names_.push_back(name);
  sections_.emplace_back("[" + name + "] " + title, 110, 55);
}

void ConfigSchema::append(ConfigField entry, const po::value_semantic* semantic) {
  std::string description = entry.help + entry.unit_suffix();
  if (entry.rule.has_range()) description += "; " + entry.rule.range_text();
  if (!entry.rule.words.empty()) description += "; one of " + join(entry.rule.words, "|");
  sections_.back().add_options()(entry.name().c_str(), semantic, description.c_str());
  fields_.push_back(std::move(entry));
}

void ConfigSchema::apply_enum_words(const ConfigOrigins& origins) {
  ConfigProblems problems(origins);
  for (const EnumWord& word : enum_words_) {
    if (word.apply(*word.text)) continue;
    problems.require(false, word.name, *word.text, "is not one of " + join(find(word.name)->rule.words, "|"));
  }
  problems.throw_if_any();
}

std::vector<std::string> ConfigSchema::rule_violations(const ConfigOrigins& origins) const {
  ConfigProblems problems(origins);
  for (const ConfigField& field : fields_) {
    if (field.number && field.rule.has_range()) {
      problems.require(field.rule.admits(field.number()), field.name(), field.current_value(),
                       "must be " + field.rule.range_text() + field.unit_suffix() +
                           (field.rule.special.empty() ? "" : " (" + field.rule.special + ")"));
    }
    if (!field.rule.words.empty()) {
      const std::string value = field.current_value();
      const bool known = std::find(field.rule.words.begin(), field.rule.words.end(), value) != field.rule.words.end();
      problems.require(known, field.name(), value, "is not one of " + join(field.rule.words, "|"));
    }
  }
  return problems.lines();
}

const ConfigField* ConfigSchema::find(const std::string& name) const {
  for (const auto& field : fields_) {
    if (field.name() == name) return &field;
  }
  return nullptr;
}

void ConfigSchema::alias(const std::string& foreign, const std::string& name, const std::string& whose) {
  aliases_[foreign] = {name, whose};
}

std::string ConfigSchema::alias_of(const std::string& foreign) const {
  const auto found = aliases_.find(foreign);
  if (found == aliases_.end()) return "";
  return foreign + " is " + found->second.second + " name for " + found->second.first;
}

po::options_description ConfigSchema::all_options() const {
  po::options_description all;
  for (const auto& section : sections_) all.add(section);
  return all;
}

}  // namespace st

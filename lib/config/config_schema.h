// A table of config keys: section, name, help, unit, range, allowed values, and a binding into a
// struct field. The parser, --help (and so docs/configuration.md), the range checks and the
// resolved-config writer all read one table, so a key is declared once: one add() line where the
// table is filled (the aggregate's owner: lib/train). Knows no particular config: lib/config
// sits under every layer that may use it.
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "util/enum_names.h"

namespace st {

namespace po = boost::program_options;

// Where each explicitly set key came from: "optim.lr" -> "run.ini:7" or "command line".
using ConfigOrigins = std::map<std::string, std::string>;

// Shortest text that parses back to the same value ("1e-05", "0.9", "42", "true", "cosine").
std::string format_config_value(double value);
std::string format_config_value(int64_t value);
std::string format_config_value(uint64_t value);
std::string format_config_value(bool value);
std::string format_config_value(const std::string& value);
template <typename Enum, std::enable_if_t<has_enum_names<Enum>::value, int> = 0>
std::string format_config_value(Enum value) {
  return enum_name(value);
}
// An optional choice: empty is written (and read) as this word.
constexpr const char* kAutomaticWord = "auto";
template <typename Enum, std::enable_if_t<has_enum_names<Enum>::value, int> = 0>
std::string format_config_value(const std::optional<Enum>& value) {
  return value ? enum_name(*value) : kAutomaticWord;
}
template <typename T>
struct is_optional_enum : std::false_type {};
template <typename Enum>
struct is_optional_enum<std::optional<Enum>> : has_enum_names<Enum> {};

// What a key's value is, for --help and error messages.
enum class ValueType { text, number, integer, boolean };
template <>
struct EnumNames<ValueType> {
  static constexpr NamedValue<ValueType> table[] = {{ValueType::text, "text"},
                                                    {ValueType::number, "number"},
                                                    {ValueType::integer, "integer"},
                                                    {ValueType::boolean, "true|false"}};
};

// What a key accepts beyond its type, declared beside its help: a numeric range, a unit, the
// words of a text key, and for a key whose one value lists several items, what they are.
//   schema.add(&c.dist.timeout_s, "timeout_s", "deadline of each collective", above(0).unit("s"));
struct KeyRule {
  std::optional<double> min, max;    // bounds of a numeric key; absent = unbounded
  bool min_open = false, max_open = false;
  std::string unit_text;             // "s", "tokens", "GiB"
  std::vector<std::string> words;    // allowed values (an enum key's: its name table); empty = any
  std::string list_items, list_example;  // "datasets", "dir_a:0.7, dir_b:0.3"
  std::string special;               // what in-range special values mean, for a violation's message

  KeyRule unit(std::string text) const;
  KeyRule choices(std::vector<std::string> allowed) const;
  KeyRule lists(std::string items, std::string example) const;
  KeyRule meaning(std::string special_values) const;  // "0 = auto"
  bool has_range() const { return min || max; }
  bool admits(double value) const;
  std::string range_text() const;    // "> 0", ">= -1", "in [0, 1)"
};
KeyRule any_value();
KeyRule above(double bound);                 // > bound
KeyRule at_least(double bound);              // >= bound
KeyRule within(double low, double high, bool high_open);  // [low, high) or [low, high]

struct ConfigField {
  std::string section;               // "optim"
  std::string key;                   // "lr"
  std::string help;                  // one line
  ValueType type = ValueType::text;
  KeyRule rule;
  std::function<std::string()> current_value;  // the bound field's value, as written in INI
  std::function<double()> number;    // a numeric field's value; empty for the others
  std::string name() const { return section + "." + key; }
  // " [s]", or "" without a unit.
  std::string unit_suffix() const { return rule.unit_text.empty() ? "" : " [" + rule.unit_text + "]"; }
};

class ConfigSchema {
 public:
  ConfigSchema() = default;
  ConfigSchema(const ConfigSchema&) = delete;  // Boost's value semantics point into this object
  ConfigSchema& operator=(const ConfigSchema&) = delete;

  // Starts a section; add() appends options to the newest one.
  void section(const std::string& name, const std::string& title);
  // Binds `key` of the current section to `*field`; its current value is the default. An enum
  // field reads its allowed values from its name table (util/enum_names.h); `rule` gives the
  // range, unit and a text field's words (rule_violations() enforces them).
  template <typename T>
  void add(T* field, const char* key, const char* help, KeyRule rule = {});

  const std::vector<ConfigField>& fields() const { return fields_; }
  const ConfigField* find(const std::string& name) const;
  // Another tool's name for a key ("learning_rate" -> "optim.lr", whose "LlamaFactory's and
  // TRL's"), which an unknown key's message points out.
  void alias(const std::string& foreign, const std::string& name, const std::string& whose);
  // "learning_rate is LlamaFactory's and TRL's name for optim.lr", or "" for no alias.
  std::string alias_of(const std::string& foreign) const;
  // One description per section, in display order, for grouped --help.
  const std::vector<po::options_description>& sections() const { return sections_; }
  po::options_description all_options() const;

  // After po::notify: turns the enum keys' parsed words into their fields. Throws one
  // ConfigError listing every word not in its table, with where it was set.
  void apply_enum_words(const ConfigOrigins& origins);
  // Each field's current value against its rule (range, words): one line per violation, as
  // "optim.lr = -1 (run.ini:7) must be > 0".
  std::vector<std::string> rule_violations(const ConfigOrigins& origins) const;

 private:
  struct EnumWord {
    std::string name;                    // "dist.sharding"
    std::unique_ptr<std::string> text;   // what Boost parsed
    std::function<bool(const std::string&)> apply;  // false: not in the table
  };
  void append(ConfigField entry, const po::value_semantic* semantic);

  std::vector<po::options_description> sections_;
  std::vector<std::string> section_names_;
  std::vector<ConfigField> fields_;
  std::vector<EnumWord> enum_words_;
  std::map<std::string, std::pair<std::string, std::string>> aliases_;  // foreign -> (name, whose)
};

template <typename T>
void ConfigSchema::add(T* field, const char* key, const char* help, KeyRule rule) {
  ConfigField entry;
  entry.section = section_names_.back();
  entry.key = key;
  entry.help = help;
  entry.current_value = [field] { return format_config_value(*field); };
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    entry.number = [field] { return static_cast<double>(*field); };
  }
  const std::string shown = format_config_value(*field);
  entry.rule = std::move(rule);
  if constexpr (has_enum_names<T>::value) {
    entry.rule.words = enum_names<T>();
    auto text = std::make_unique<std::string>(shown);
    auto* semantic = po::value<std::string>(text.get())->default_value(shown, shown);
    enum_words_.push_back({entry.name(), std::move(text), [field](const std::string& word) { return find_enum(word, *field); }});
    append(std::move(entry), semantic);
  } else if constexpr (is_optional_enum<T>::value) {  // a choice, or auto (empty)
    using Enum = typename T::value_type;
    entry.rule.words = enum_names<Enum>();
    entry.rule.words.push_back(kAutomaticWord);
    auto text = std::make_unique<std::string>(shown);
    auto* semantic = po::value<std::string>(text.get())->default_value(shown, shown);
    enum_words_.push_back({entry.name(), std::move(text), [field](const std::string& word) {
                             Enum value{};
                             if (find_enum(word, value)) {
                               *field = value;
                               return true;
                             }
                             if (word != kAutomaticWord) return false;
                             field->reset();
                             return true;
                           }});
    append(std::move(entry), semantic);
  } else {
    if constexpr (std::is_same_v<T, bool>) entry.type = ValueType::boolean;
    else if constexpr (std::is_floating_point_v<T>) entry.type = ValueType::number;
    else if constexpr (std::is_integral_v<T>) entry.type = ValueType::integer;
    auto* semantic = po::value<T>(field)->default_value(*field, shown);
    if constexpr (std::is_same_v<T, bool>) semantic->implicit_value(true, "true");
    append(std::move(entry), semantic);
  }
}

}  // namespace st

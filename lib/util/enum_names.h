// A value from a fixed set is an enum with one name table, specialised next to the enum:
//   template <> struct EnumNames<Sharding> {
//     static constexpr NamedValue<Sharding> table[] = {{Sharding::full, "full"}, ...};
//   };
// Parsing, printing, --help and the docs all read that table; code switches on the enum.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "util/errors.h"

namespace st {

template <typename Enum>
struct NamedValue {
  Enum value;
  const char* name;
};

template <typename Enum>
struct EnumNames;  // specialise with `static constexpr NamedValue<Enum> table[]`

template <typename T, typename = void>
struct has_enum_names : std::false_type {};
template <typename T>
struct has_enum_names<T, std::void_t<decltype(EnumNames<T>::table)>> : std::true_type {};

template <typename Enum>
const char* enum_name(Enum value) {
  for (const auto& entry : EnumNames<Enum>::table) {
    if (entry.value == value) return entry.name;
  }
  return "?";
}

template <typename Enum>
std::vector<std::string> enum_names() {
  std::vector<std::string> names;
  for (const auto& entry : EnumNames<Enum>::table) names.emplace_back(entry.name);
  return names;
}

template <typename Enum>
std::vector<Enum> enum_values() {
  std::vector<Enum> values;
  for (const auto& entry : EnumNames<Enum>::table) values.push_back(entry.value);
  return values;
}

// "a|b|c": the allowed words, for messages and --help.
template <typename Enum>
std::string enum_choices() {
  std::string joined;
  for (const auto& entry : EnumNames<Enum>::table) joined += (joined.empty() ? "" : "|") + std::string(entry.name);
  return joined;
}

// false when `name` is not in the table (`value` untouched).
template <typename Enum>
bool find_enum(const std::string& name, Enum& value) {
  for (const auto& entry : EnumNames<Enum>::table) {
    if (name == entry.name) {
      value = entry.value;
      return true;
    }
  }
  return false;
}

// Throws ConfigError "<what> = 'name' is not one of a|b|c" (`what`: the key or flag read).
template <typename Enum>
Enum parse_enum(const std::string& name, const std::string& what) {
  Enum value{};
  if (!find_enum(name, value)) {
    throw ConfigError(what + " = '" + name + "' is not one of " + enum_choices<Enum>());
  }
  return value;
}

}  // namespace st

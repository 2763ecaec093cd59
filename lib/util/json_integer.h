// Integers read from JSON files that come from elsewhere: nlohmann's get<int64_t>() on 4.3e23
// casts a double out of range (undefined behaviour), and on -1 for an unsigned wraps around.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>

namespace st {

// The integer `value` holds if it is an integer (not a float, bool or string) that fits T.
template <typename T>
std::optional<T> json_integer(const nlohmann::json& value) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  if (value.is_number_unsigned()) {
    const auto v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<T>::max())) return std::nullopt;
    return static_cast<T>(v);
  }
  if (!value.is_number_integer()) return std::nullopt;
  const auto v = value.get<int64_t>();
  if (v < 0 && std::is_unsigned_v<T>) return std::nullopt;
  if (std::is_signed_v<T> && (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
                              v > static_cast<int64_t>(std::numeric_limits<T>::max()))) {
    return std::nullopt;
  }
  return static_cast<T>(v);
}

}  // namespace st

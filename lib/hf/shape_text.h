// A tensor shape as error messages print it: "[2, 3]".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace st {

inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

}  // namespace st

#include "util/duration_text.h"

#include <cmath>
#include <cstdio>

namespace st {

std::string duration_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto whole = static_cast<long long>(seconds);
  char text[32];
  if (whole < 60) {
    std::snprintf(text, sizeof(text), "%llds", whole);
  } else if (whole < 3600) {
    std::snprintf(text, sizeof(text), "%lldm%02llds", whole / 60, whole % 60);
  } else if (whole < 86400) {
    std::snprintf(text, sizeof(text), "%lldh%02lldm", whole / 3600, whole / 60 % 60);
  } else {
    std::snprintf(text, sizeof(text), "%lldd%02lldh", whole / 86400, whole / 3600 % 24);
  }
  return text;
}

}  // namespace st

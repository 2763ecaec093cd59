// A duration as people read it in a batch log: "42s", "3m05s", "4h12m", "2d03h".
#pragma once

#include <string>

namespace st {

// Rounded down to its two largest units; negative or not finite durations print as "?".
std::string duration_text(double seconds);

}  // namespace st

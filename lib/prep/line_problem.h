// Why one input record of `shardtune prep` gives no pair: counted per reason and, with
// --strict, fatal.
#pragma once

#include <string>

namespace st {

struct LineProblem {
  std::string reason;  // stable short key, e.g. "id out of vocab"
  std::string detail;  // with the field and value
};

}  // namespace st

#include "cluster_shape.h"

#include <sstream>

#include "util/errors.h"

namespace st {

ClusterShape parse_world_shape(const std::string& text, const std::string& command) {
  ClusterShape shape;
  char x = 0;
  std::istringstream in(text);
  if (!(in >> shape.nodes >> x >> shape.ranks_per_node) || x != 'x' || !in.eof() || shape.nodes < 1 ||
      shape.ranks_per_node < 1) {
    throw ConfigError(command + ": --world '" + text + "' is not NODESxRANKS_PER_NODE (e.g. --world 2x8)");
  }
  shape.on_gpu = true;
  return shape;
}

}  // namespace st

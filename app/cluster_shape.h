// The cluster a plan is for, in the words train --dry-run and estimate share: --world 2x8
// (NODES x RANKS_PER_NODE, one rank per GPU).
#pragma once

#include <string>

namespace st {

struct ClusterShape {
  int nodes = 1, ranks_per_node = 1;
  bool on_gpu = false;
};

// "2x8" -> 2 nodes of 8 ranks on GPUs. Throws ConfigError naming `command` and the flag.
ClusterShape parse_world_shape(const std::string& text, const std::string& command);

}  // namespace st

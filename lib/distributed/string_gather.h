// Gathering variable-length strings from every rank (host names, version fingerprints).
#pragma once

#include <string>
#include <vector>

#include "distributed/communicator.h"

namespace st {

// Collective over `communicator` (CPU backend): element r of the result is rank r's `text`.
std::vector<std::string> all_gather_strings(Communicator& communicator, const std::string& text);

// Collective over `communicator`: every rank's `block` concatenated in rank order and written by
// rank 0 to `path` (temporary file + rename, so an existing file is never half-overwritten);
// returns once the file is there. The outputs of commands that split their input lines across
// ranks in contiguous blocks (score, generate).
void write_rank_blocks(Communicator& communicator, const std::string& block, const std::string& path);

}  // namespace st

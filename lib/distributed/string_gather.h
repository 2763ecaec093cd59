// Gathering variable-length strings from every rank (host names, version fingerprints).
#pragma once

#include <string>
#include <vector>

#include "distributed/communicator.h"

namespace st {

// Collective over `communicator` (CPU backend): element r of the result is rank r's `text`.
std::vector<std::string> all_gather_strings(Communicator& communicator, const std::string& text);

}  // namespace st

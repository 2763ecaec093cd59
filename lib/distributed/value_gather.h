// Gathering a few host-side numbers from every rank (step shapes, metric sums): one all-gather
// of doubles, from which each rank can take sums, maxima or any rank's values.
#pragma once

#include <vector>

#include "distributed/communicator.h"

namespace st {

// Collective over `communicator` (CPU backend); every rank passes as many values. The result
// is rank-major: rank r's values start at r * values.size().
std::vector<double> all_gather_values(Communicator& communicator, const std::vector<double>& values);

// Collective: every rank's `values` (any number of them) one after another in rank order (the
// counts gathered first, then the values padded to the most).
std::vector<double> concatenated_values(Communicator& communicator, const std::vector<double>& values);

// Collective: the largest of every rank's `value`.
double max_over_ranks(Communicator& communicator, double value);

}  // namespace st

// Collation into laid-out rows (row_layout.h): with packing, several whole sequences per row up
// to a token capacity; with a shared prompt (DPO), one segment per pair holding the prompt once,
// then chosen, then rejected. The prompt's last token starts each branch (it predicts the first
// response token of both), so the shared segment is [prompt[:-1] | prompt[-1], chosen |
// prompt[-1], rejected] with the rejected branch continuing the prompt's positions: every
// position then has at most one target, and each branch sees exactly the keys of its plain row.
#pragma once

#include <vector>

#include "data/collate.h"

namespace st {

// `pairs` already fitted to the cutoff. Rows hold at most max(capacity, longest segment)
// tokens, capacity = options.max_tokens when > 0, else options.cutoff_len; segments are placed
// first-fit in decreasing length (fewest rows), one per row without packing.
MicroBatch collate_laid_out(const std::vector<Pair>& pairs, PairKind kind, const CollateOptions& options);

}  // namespace st

// The runs of laid-out rows (data/row_layout.h): each stretch of tokens of one segment and branch,
// over the flattened [R * T] tokens in order. A prompt-shared branch's run continues its segment's
// shared run (the prompt it follows); every other run starts a sequence. Attention's spans
// (attention_spans.h) and a recurrent mixer's state (gated_delta_layer.h) follow them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "data/row_layout.h"

namespace st {

struct SequenceRun {
  int64_t begin = 0, end = 0;  // [begin, end) of the flattened tokens
  int64_t continues = -1;      // the index of the run this one follows on (a branch's prompt); -1: none
};

// nullopt when the layout is not one that collate builds (a branch run before its segment's
// shared run, or one segment's branch in two runs). Host tensors or device ones (copied back).
std::optional<std::vector<SequenceRun>> layout_runs(const RowLayout& layout);

}  // namespace st

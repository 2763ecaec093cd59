// The gated delta rule on the GPU: cuda/gated_delta_rule's kernels (fp32, forward and backward)
// under autograd. The chunked libtorch path (gated_delta_rule.cpp) stays the CPU path and the
// kernels' reference; gated_delta_rule() chooses between them.
#pragma once

#include <cstdint>
#include <vector>

#include "model/gated_delta_rule.h"

namespace st {

// CUDA fp32 inputs in a build with CUDA.
bool gated_delta_kernel_applies(const GatedDeltaInputs& in);

// The rule by the kernels: values and gradients as gated_delta_rule_chunked's, in fp32, with
// nothing but the inputs kept for the backward (it recomputes the chunks' states).
// `sequence_starts` (0, ..., T): packed rows in one launch, each sequence from a zero state
// (final_state then undefined).
GatedDeltaOutputs gated_delta_rule_kernel(const GatedDeltaInputs& in, int64_t chunk,
                                          const std::vector<int64_t>* sequence_starts = nullptr);

}  // namespace st

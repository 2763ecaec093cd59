// Model FLOPs of a micro-batch, for MFU (docs/metrics.md, "MFU"): the PaLM appendix-B count,
// per sequence of n tokens 2 N n (matmuls over the weights) + 4 L d n^2 (attention scores and
// values, counted without the causal half) for a forward pass, x3 with backward. N excludes
// the input embedding table (a lookup, not a matmul); recomputation is not counted (it is
// hardware FLOPs, not model FLOPs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hf/model_config.h"
#include "train/train_options.h"

namespace st {

// Forward FLOPs of one sequence of `tokens` tokens.
double forward_flops(const ModelConfig& config, int64_t tokens);

// Model FLOPs of training on rows of these non-padding lengths (forward + backward), plus one
// forward per row of a reference model when `with_reference`. `frozen_weights` (LoRA): the
// backward computes input gradients only, 2 N n less per sequence (adapters' FLOPs not counted).
double training_flops(const ModelConfig& config, const std::vector<int64_t>& segment_lengths, bool with_reference,
                      bool frozen_weights = false);

// Peak dense TFLOP/s of one device for the compute dtype, from its name; 0 when unknown.
double known_peak_tflops(const std::string& device_name, ComputeDtype compute_dtype);

}  // namespace st

// A hybrid decoder layer's Gated DeltaNet token mixer (model/gated_delta_mixer.h) in attention's
// place: its weights from the layer's (linear_attn.* rows, hf/param_table.h), its sizes from the
// config, and its sequences as the micro-batch lays them out (TokenPositions::runs): the conv
// window and the recurrent state begin again at every sequence, and a prompt-shared branch
// continues from its prompt's final state and last conv inputs, gradients flowing into the prompt.
#pragma once

#include <ATen/core/Tensor.h>

#include "hf/model_config.h"
#include "model/llama_blocks.h"

namespace st {

// x [B, T, D] (already normalised) -> [B, T, D]. With `cache` (generation) each row continues
// from the layer's carry there and leaves its new one; left padding (KvCache::new_tokens_valid)
// enters as zeros, which leave the conv inputs and the state at zero, as transformers masks it.
// Throws ModelError under context parallelism (the state would have to pass between ranks) and
// for a layout collate does not build.
at::Tensor gated_delta_block(const LayerWeights& weights, const at::Tensor& x, const TokenPositions& positions,
                             const ModelConfig& config, KvCache* cache = nullptr);

// What one Gated DeltaNet layer's forward keeps for its backward, per token, in 2-byte elements
// of the compute dtype (fp32 intermediates counted twice), for fsdp/memory_estimate.h.
int64_t gated_delta_activation_elements(const ModelConfig& config);

}  // namespace st

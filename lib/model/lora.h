// LoRA adapters on a Llama layer's projections (Hu et al. 2021; PEFT's LoraLayer): a projection
// W x becomes W x + scale * B (A dropout(x)), A [r, in], B [out, r], scale = alpha / r (or
// alpha / sqrt(r) with rslora). The adapters carry PEFT's tensor names (hf/param_table.h), so
// the FSDP engine shards them as units and the export writes them as they are. Dense projections
// are separate matrices here (no fused qkv / gate_up), so each target is its own pair; a sparse
// layer's experts share PEFT's stacked pairs (adapted_pair slices one expert's).
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hf/model_config.h"
#include "hf/param_table.h"
#include "model/lora_options.h"
#include "util/enum_names.h"

namespace st {

// One projection's adapter; undefined tensors = not adapted.
struct LoraPair {
  at::Tensor a, b;
};
using LoraPairs = std::array<LoraPair, kLoraTargetCount>;

// How a forward applies the adapters: dropout only in a differentiated pass, with a seed that a
// recompute of the same micro-batch repeats (the mask is a hash of seed, layer, target and
// element, so it needs no generator state).
struct AdapterForward {
  double scale = 0.0;
  double dropout = 0.0;
  int64_t dropout_seed = 0;
};

// The dropout stream of `layer`'s adapter on `target`: every projection's its own.
inline int64_t lora_stream(int64_t layer, LoraTarget target) {
  return layer * static_cast<int64_t>(kLoraTargetCount) + static_cast<int64_t>(target);
}

// x [.., in] -> scale * B A dropout(x) [.., out], in x's dtype. `stream` tells projections apart
// (lora_stream).
// `token_places` [tokens] int64 on x's device: each token's place in the whole micro-batch, which
// the dropout masks hash, so a rank that holds some of the tokens (context parallelism) drops
// what one rank holding all would; undefined: x's own token order.
at::Tensor lora_delta(const at::Tensor& x, const LoraPair& pair, const AdapterForward& adapter, int64_t stream,
                      const at::Tensor& token_places = {});
// The pair that changes `piece` (hf/param_table.h adapted_weights): `pair` itself for a dense
// projection; for a sparse layer's stacked pair of `experts`, expert e's slice as PEFT reads it,
// A.view(E, r, in)[e] and B.view(out, r, E)[:, :, e] (rows per the piece), views of the pair.
LoraPair adapted_pair(const LoraPair& pair, const AdaptedWeight& piece, int64_t experts);
// W + scale * B A for rows [row_begin, row_end) of W (fp32): what a merged export holds.
at::Tensor merged_rows(const at::Tensor& weight_rows, const LoraPair& pair, double scale, int64_t row_begin);

}  // namespace st

// QLoRA's frozen base (train.method = qlora): each decoder layer's projection weights held as NF4
// (model/nf4.h), the other parameters (norms, biases; the embedding and head units whole) in the
// compute dtype. A unit's projection weights are laid out as whole NF4 blocks, each weight from a
// block boundary, and a rank owns a run of whole blocks: it quantizes only what it owns, and its
// bytes equal those blocks of each whole weight quantized alone (bitsandbytes' per-tensor layout).
// A rank's shard is one byte buffer (codes | block absmax | the rest in the compute dtype), so a
// unit is all-gathered as bytes in one collective and dequantized just before it runs into the
// flat its parameter views bind to: the projection blocks, then the rest.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "distributed/communicator.h"
#include "fsdp/unit_layout.h"

namespace st {

struct QuantizedUnitLayout {
  UnitLayout blocks;  // the projection weights, each at a multiple of 64; shard_numel = whole blocks
  UnitLayout dense;   // the other parameters, packed
  UnitLayout bound;   // all of them where the dequantized flat holds them: blocks, then dense
  bool double_quant = false;
  at::ScalarType compute_dtype = at::kBFloat16;  // of the dense section
  // A shard's byte sections, each 16-byte aligned: NF4 codes, absmax (fp32, or one 8-bit code
  // per block with double quantization), the dense shard.
  int64_t absmax_begin = 0, dense_begin = 0, shard_bytes = 0;

  int64_t shard_blocks() const;
  int64_t total_blocks() const;  // over the group, padding included
  int64_t dense_bytes() const;   // of a shard's dense section
};

// `unit`: the base unit as build_unit_layouts lays it out (its parameters in HF order).
QuantizedUnitLayout build_quantized_unit_layout(const UnitLayout& unit, int group_size, bool double_quant,
                                                at::ScalarType compute_dtype);

// Double quantization's per-weight statistics, the same on every rank of the group: each
// projection weight's absmax offset (the mean of its block absmax values) and the fp32 absmax of
// its groups of 256 blocks, concatenated in weight order.
struct AbsmaxStatistics {
  std::vector<float> offsets;
  at::Tensor nested_absmax;  // fp32
};

struct QuantizedUnit {
  QuantizedUnitLayout layout;
  AbsmaxStatistics statistics;  // double quantization only
};

// A rank's shard from its fp32 values of `layout.blocks` and `layout.dense` (load_unit_shard /
// init_unit_shard of those layouts): uint8 [shard_bytes]. With double quantization the group
// all-gathers the block absmax values (fp32, once at load) so every rank codes against the
// whole weight's statistics, which it returns in `statistics`.
at::Tensor quantize_unit_shard(const QuantizedUnitLayout& layout, const at::Tensor& block_values,
                               const at::Tensor& dense_values, Communicator& group, AbsmaxStatistics& statistics);
// Copies a rank's dense values (its shard of `layout.dense`) into its shard bytes.
void write_dense_section(const QuantizedUnitLayout& layout, at::Tensor& shard, const at::Tensor& dense_values);

// The same from the whole unit's block absmax values (fp32 [total_blocks]) already in hand: the
// per-weight statistics and the 8-bit codes of every block.
struct DoubleQuantized {
  AbsmaxStatistics statistics;
  at::Tensor codes;  // uint8 [total_blocks]
};
DoubleQuantized double_quantize(const QuantizedUnitLayout& layout, const at::Tensor& absmax);

// Scratch a dequantization takes beside the unit's flat: the libtorch path works in chunks;
// cuda/'s kernel needs only the fp32 absmax values.
int64_t dequantize_workspace_bytes();

// The group's shards gathered in rank order (uint8 [group size x shard_bytes], on any device)
// -> the unit's flat in `dtype` [bound.padded_numel], laid out as `bound`. On a GPU the codes go
// through cuda/nf4_dequantize (when built with CUDA); elsewhere, and as its oracle, libtorch ops.
at::Tensor dequantize_unit(const QuantizedUnit& unit, const at::Tensor& gathered, at::ScalarType dtype);
// The libtorch path alone, on the tensors' device (tests compare the kernel with it).
at::Tensor dequantize_unit_reference(const QuantizedUnit& unit, const at::Tensor& gathered, at::ScalarType dtype);

}  // namespace st

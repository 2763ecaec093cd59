// A bitsandbytes 4-bit checkpoint (transformers load_in_4bit, saved with save_pretrained) read
// as a QLoRA base without re-quantizing: per projection weight, the packed codes (`weight`,
// uint8 [ceil(n / 2), 1]), the block absmax (`weight.absmax`: fp32, or 8-bit codes with
// `weight.nested_absmax` and the offset in the quant state), the code tables (`weight.quant_map`,
// `weight.nested_quant_map`) and `weight.quant_state.bitsandbytes__nf4` (JSON bytes: quant_type,
// blocksize, shape, nested_offset). A rank reads only its own blocks' bytes.
#pragma once

#include <ATen/core/Tensor.h>

#include "fsdp/quantized_base.h"
#include "hf/safetensors_checkpoint.h"

namespace st {

// This rank's shard (uint8 [layout.shard_bytes], on the CPU) of a unit whose projection weights
// `checkpoint` holds in NF4; `dense_values` are its fp32 values of `layout.dense`. Fills
// `statistics` with double quantization. Throws ModelError naming the tensor and the fix when a
// weight is in another format (fp4, another block size or code table, another shape) or its
// double quantization differs from `layout.double_quant`.
at::Tensor read_nf4_unit_shard(const QuantizedUnitLayout& layout, int rank, const SafetensorsCheckpoint& checkpoint,
                               const at::Tensor& dense_values, AbsmaxStatistics& statistics);

}  // namespace st

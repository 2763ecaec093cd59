// A bitsandbytes 4-bit checkpoint read as a QLoRA base without re-quantizing: each projection
// weight as stored (model/stored_nf4.h), a rank reading only its own blocks' bytes.
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

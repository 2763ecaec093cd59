#include "fsdp/nf4_checkpoint.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "model/nf4.h"
#include "model/stored_nf4.h"
#include "util/errors.h"

namespace st {

at::Tensor read_nf4_unit_shard(const QuantizedUnitLayout& layout, int rank, const SafetensorsCheckpoint& checkpoint,
                               const at::Tensor& dense_values, AbsmaxStatistics& statistics) {
  const int64_t shard_blocks = layout.shard_blocks(), first_block = rank * shard_blocks;
  at::Tensor shard = at::zeros({layout.shard_bytes}, at::kByte);
  statistics = {};
  std::vector<at::Tensor> nested;
  for (const ParamSlot& slot : layout.blocks.params) {
    const ParamSpec& spec = slot.spec;
    const StoredNf4Weight weight(checkpoint, spec);
    if (weight.double_quant() != layout.double_quant) {
      throw ModelError(checkpoint.directory() + ": tensor '" + spec.name + "' has " +
                       (weight.double_quant() ? "8-bit (double-quantized)" : "fp32") +
                       " absmax; set lora.double_quant = " + (weight.double_quant() ? "true" : "false") +
                       " to read it as stored");
    }
    const int64_t blocks = weight.blocks(), code_bytes = weight.code_bytes();
    const bool double_quant = weight.double_quant();
    if (double_quant) {
      nested.push_back(weight.nested_absmax());
      statistics.offsets.push_back(weight.nested_offset());
    }
    // This rank's blocks of this weight.
    const int64_t weight_first = slot.offset / kNf4BlockSize;
    const int64_t begin = std::max(first_block, weight_first);
    const int64_t end = std::min(first_block + shard_blocks, weight_first + blocks);
    if (end <= begin) continue;
    const int64_t local = begin - first_block, from = begin - weight_first, count = end - begin;
    const int64_t bytes = std::min(count * kNf4BlockSize / 2, code_bytes - from * kNf4BlockSize / 2);
    checkpoint.read_range_into(spec.name, from * kNf4BlockSize / 2, bytes,
                               shard.narrow(0, local * kNf4BlockSize / 2, bytes));
    // The last block's padding past the file's bytes: the code of 0 (7), as quantizing the
    // zero-padded tail gives, so a stored weight's shard equals a quantized one byte for byte.
    const int64_t padding = count * kNf4BlockSize / 2 - bytes;
    if (padding > 0) shard.narrow(0, local * kNf4BlockSize / 2 + bytes, padding).fill_(0x77);
    if (double_quant) {
      checkpoint.read_range_into(spec.name + ".absmax", from, count, shard.narrow(0, layout.absmax_begin + local, count));
    } else {
      checkpoint.read_range_into(spec.name + ".absmax", from, count,
                                 shard.narrow(0, layout.absmax_begin + local * 4, count * 4).view(at::kFloat));
    }
  }
  statistics.nested_absmax = nested.empty() ? at::empty({0}, at::kFloat) : at::cat(nested);
  write_dense_section(layout, shard, dense_values);
  return shard;
}

}  // namespace st

// One weight a bitsandbytes 4-bit checkpoint (transformers load_in_4bit, saved with
// save_pretrained) holds in NF4: the packed codes (`weight`, uint8 [ceil(n / 2), 1]), the block
// absmax (`weight.absmax`: fp32, or 8-bit codes with `weight.nested_absmax` and the offset in the
// quant state), the code tables (`weight.quant_map`, `weight.nested_quant_map`) and
// `weight.quant_state.bitsandbytes__nf4` (JSON bytes: quant_type, blocksize, shape,
// nested_offset). Checked on construction; read whole (dequantized, for score, generate and
// eval) or by block ranges (a QLoRA base's shards: fsdp/nf4_checkpoint.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "hf/param_table.h"
#include "hf/safetensors_checkpoint.h"

namespace st {

// Whether `checkpoint` holds `name` in NF4 (it has the quant state bitsandbytes writes beside it).
bool stored_in_nf4(const SafetensorsCheckpoint& checkpoint, const std::string& name);

class StoredNf4Weight {
 public:
  // Throws ModelError naming the tensor and the fix when the weight is in another format (fp4,
  // another block size or code table, another shape than config.json's) or a part is missing.
  StoredNf4Weight(const SafetensorsCheckpoint& checkpoint, const ParamSpec& spec);

  bool double_quant() const { return double_quant_; }
  float nested_offset() const { return nested_offset_; }  // double quant: the absmax values' mean
  at::Tensor nested_absmax() const;                       // double quant: fp32 [ceil(blocks / 256)]
  int64_t blocks() const;
  int64_t code_bytes() const;
  // fp32 in config.json's shape, as bitsandbytes' dequantize_4bit defines it: code value x the
  // absmax of its block of 64 over the flattened weight.
  at::Tensor dequantized() const;

 private:
  const SafetensorsCheckpoint& checkpoint_;
  ParamSpec spec_;
  bool double_quant_ = false;
  float nested_offset_ = 0.0f;
};

}  // namespace st

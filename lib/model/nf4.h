// NF4 (4-bit NormalFloat, Dettmers et al. 2023) exactly as bitsandbytes stores it: blocks of 64
// weights, one fp32 absmax per block, each weight scaled by 1 / absmax (an fp32 reciprocal) and
// rounded to the nearest of 16 normal quantiles by bitsandbytes' decision tree; two codes per
// byte, the block's earlier element in the high nibble. A tail shorter than a block is padded
// with zeros. Where bitsandbytes' CUDA kernel and its CPU backend differ (an all-zero block:
// code 0 vs 7; a tail divided instead of multiplied) the bytes follow the CUDA kernel, which
// wrote the 4-bit checkpoints users have. The libtorch path here is the oracle of any device
// kernel. Double quantization (bitsandbytes' compress_statistics) stores the absmax values
// less their mean as 8-bit codes of the signed dynamic map, in blocks of 256 with an fp32
// absmax each.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "cuda/nf4_table.h"
#include "util/dynamic_quant.h"  // dynamic_map, dynamic_code: the absmax codes of double quantization

namespace st {

inline constexpr int64_t kNf4BlockSize = 64;
// bitsandbytes' table (cuda/nf4_table.h).
inline constexpr float kNf4Codes[16] = ST_NF4_CODE_VALUES;
// The decision tree's thresholds (kernels.cu dQuantizeNF4), ascending: a value's code is the
// number of thresholds it exceeds (NaN exceeds none, as in the tree).
inline constexpr float kNf4Thresholds[15] = {
    -0.8480964004993439f,  -0.6106329262256622f, -0.4599952697753906f,  -0.33967943489551544f,
    -0.23460740596055984f, -0.13791173323988914f, -0.045525018125772476f, 0.03979014977812767f,
    0.1202552504837513f,   0.2035212516784668f,   0.2920137718319893f,    0.3893125355243683f,
    0.5016634166240692f,   0.6427869200706482f,   0.8614784181118011f};

// Blocks of 64 that hold `numel` weights, the last one padded.
inline int64_t nf4_blocks(int64_t numel) { return (numel + kNf4BlockSize - 1) / kNf4BlockSize; }

struct Nf4Tensor {
  at::Tensor codes;   // uint8 [ceil(numel / 2)]: two codes per byte, the earlier element high
  at::Tensor absmax;  // fp32 [ceil(numel / 64)]
  int64_t numel = 0;
};

// The code of one weight already scaled by 1 / absmax.
uint8_t nf4_code(float scaled);

// Double quantization (bitsandbytes' compress_statistics): the block absmax values less their
// mean, coded in the signed dynamic map (util/dynamic_quant.h) in blocks of 256.
inline constexpr int64_t kAbsmaxBlockSize = kDynamicBlockSize;

struct QuantizedAbsmax {
  at::Tensor codes;   // uint8 [blocks]: (absmax - offset) in the dynamic map
  at::Tensor absmax;  // fp32 [ceil(blocks / 256)]
  float offset = 0.0f;
};
// `offset` is the mean of the whole tensor's block absmax values (bitsandbytes: absmax.mean());
// a rank holding a shard gets it from its group, so every shard codes against the same offset.
QuantizedAbsmax quantize_absmax(const at::Tensor& absmax, float offset);
at::Tensor dequantize_absmax(const QuantizedAbsmax& quantized);  // fp32 [blocks]
// `weights` (any float dtype, any shape; read flat) -> its NF4 form. A flat range that starts
// on a block boundary quantizes to the same bytes as that range of the whole tensor, so each
// rank can quantize only its own block-aligned shard.
Nf4Tensor nf4_quantize(const at::Tensor& weights);
// -> flat [numel] in `dtype`: code value x absmax in fp32, then cast (bitsandbytes' order).
at::Tensor nf4_dequantize(const Nf4Tensor& quantized, at::ScalarType dtype);

}  // namespace st

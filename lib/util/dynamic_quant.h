// bitsandbytes' 8-bit dynamic (tree) quantization, blockwise (Dettmers et al. 2022, "8-bit
// Optimizers via Block-wise Quantization"): values scaled by their block's absmax and coded as
// the nearest of 256 sorted map values (functional.py create_dynamic_map). The signed map codes
// the NF4 absmax of double quantization and AdamW8bit's first moment; the unsigned map the
// second moment. Blocks of 256, the last one shorter.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace st {

inline constexpr int64_t kDynamicBlockSize = 256;

enum class DynamicMap { signed_values, unsigned_values };

// create_dynamic_map(signed=...): 256 sorted fp32 values, signed in [-0.993, 1], unsigned in [0, 1].
at::Tensor dynamic_map(DynamicMap kind = DynamicMap::signed_values);
// The same values, made once per process (host loops read them every step).
const float* dynamic_map_values(DynamicMap kind);
// The code of `x` (already scaled by 1 / absmax) in the sorted 256-value `map`: the kernel's
// binary search and midpoint rule (kernels.cu dQuantize<0>), the nearest value.
uint8_t dynamic_code(const float* map, float x);
// The same in `kind`'s map, mostly by a table lookup (the search where the table cannot tell).
uint8_t dynamic_code(DynamicMap kind, float x);
// The code of exactly 0 in `kind`'s map (what padding holds: a block's absmax ignores it).
uint8_t zero_code(DynamicMap kind);
// Codes [n] (uint8) with one absmax per block of 256 -> fp32 [n]: map value x its block's absmax.
// `into_first_block`: where codes[0] sits in absmax[0]'s block (a range not starting on a block).
at::Tensor dequantize_dynamic(const at::Tensor& codes, const at::Tensor& absmax, DynamicMap kind,
                              int64_t into_first_block = 0);
// fp32 values [n] (any device) -> codes [n] (uint8) and absmax [ceil(n / 256)], on the host.
struct DynamicCoded {
  at::Tensor codes, absmax;
};
DynamicCoded quantize_dynamic(const at::Tensor& values, DynamicMap kind);
// Codes `n` values of one block: `*absmax` = their largest magnitude, each value x its fp32
// reciprocal coded in `kind`'s map (an all-zero block codes 0 x inf = NaN as the kernel does:
// never read back, its absmax being 0).
void quantize_dynamic_block(const float* values, int64_t n, DynamicMap kind, uint8_t* codes, float* absmax);

}  // namespace st

/* A QLoRA base unit's NF4 codes -> its weights in the compute dtype, in one pass: each byte's
   two codes looked up in the NF4 table, multiplied by their block's absmax in fp32 and rounded
   once (bitsandbytes' order). The codes are read where the all-gather left them: each rank's
   shard is a row of `row_bytes` bytes that begins with its `blocks_per_row` blocks of codes.
   The reference is the libtorch path in lib/fsdp/quantized_base.cpp (tests/cuda/
   test_nf4_dequantize.cpp compares them bit for bit). */
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "cuda/activation_dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out [rows x blocks_per_row x 64] contiguous in `dtype`; absmax fp32 [rows x blocks_per_row]
   contiguous; codes: row r's block b at codes + r * row_bytes + b * 32, the block's earlier
   element in each byte's high nibble. */
cudaError_t st_nf4_dequantize(const uint8_t* codes, int64_t row_bytes, int64_t blocks_per_row, int64_t rows,
                              const float* absmax, void* out, StActivationDtype dtype, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

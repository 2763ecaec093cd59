/* AdamW with bitsandbytes' blockwise 8-bit moments on the GPU, fused: one thread block per block
   of 256 elements dequantizes m and v, applies the update of fused_adamw.h to them and the fp32
   parameters, and recodes the moments against the block's new absmax. Every operation is
   IEEE-rounded as written (no contraction), so the result equals the host loop's of
   lib/optim/adamw8bit.cpp bit for bit (tests/cuda/test_adamw8bit.cpp). */
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "cuda/adamw_scalars.h"
#include "cuda/fused_adamw.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Updates elements [0, n) of param (n from a block boundary; the last block may be short) and
   the codes/absmax of its moments in place: m_codes/v_codes [n], m_absmax/v_absmax [ceil(n/256)];
   signed_map/unsigned_map: the 256 sorted map values (device memory). grad is multiplied by
   *grad_scale (NULL = 1). Elements in the `decayed_count` ranges of decayed ((offset, length)
   pairs, device memory) are multiplied by s.decay_factor first. Writes param rounded to
   copy_dtype into copy unless ST_COPY_NONE. Queued on stream; returns the launch's error. */
cudaError_t st_adamw8bit(float* param, uint8_t* m_codes, float* m_absmax, uint8_t* v_codes, float* v_absmax,
                         const float* grad, const float* grad_scale, const float* signed_map,
                         const float* unsigned_map, const int64_t* decayed, int decayed_count, void* copy,
                         StCopyDtype copy_dtype, int64_t n, StAdamWScalars s, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

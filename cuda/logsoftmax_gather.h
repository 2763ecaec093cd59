/* The row-wise reductions of the chunked lm_head log-probs (lib/model/token_logp.cpp), fused:
   one pass over a [rows, vocab] logits chunk gives each row's logsumexp and its target's
   log-prob; one pass in backward turns the chunk in place into its gradient. The reference is
   the libtorch op sequence there (tests/cuda/test_fused_logp.cpp compares them with the
   full-logits path on odd sizes). A target of -100 is ignored: log-prob 0, gradient 0. */
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum StLogitsDtype { ST_LOGITS_FP32 = 0, ST_LOGITS_BF16 = 1, ST_LOGITS_FP16 = 2 } StLogitsDtype;

/* logits [rows, vocab] row-major, each divided by `temperature` (in fp32) before the softmax;
   fp32 accumulation. lse[i] = logsumexp(row i / temperature), logp[i] = row i [targets[i]] /
   temperature - lse[i] (0 where ignored); entropy, when not null: entropy[i] = -sum p log p of
   that softmax (TRL's entropy_from_logits), from a second pass over the row. */
cudaError_t st_logsumexp_gather(const void* logits, StLogitsDtype dtype, const int64_t* targets, float temperature,
                                float* logp, float* lse, float* entropy, int64_t rows, int64_t vocab,
                                cudaStream_t stream);

/* In place: row i becomes grad[i] / temperature * (onehot(targets[i]) - exp(row i / temperature -
   lse[i])), rounded once to the logits' dtype (0 where ignored). */
cudaError_t st_logsoftmax_gather_backward(void* logits, StLogitsDtype dtype, const int64_t* targets, float temperature,
                                          const float* lse, const float* grad, int64_t rows, int64_t vocab,
                                          cudaStream_t stream);

#ifdef __cplusplus
}
#endif

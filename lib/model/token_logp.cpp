#include "model/token_logp.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>

#include "util/errors.h"
#include "util/torch_compat.h"
#if ST_HAVE_CUDA
#include "cuda/logsoftmax_gather.h"
#include "util/check_cuda.h"
#endif

namespace st {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// Reductions run in fp32 (fp64 inputs stay fp64), as transformers upcasts logits.
at::ScalarType reduction_type(const at::Tensor& weight) {
  return at::promote_types(weight.scalar_type(), at::kFloat);
}

#if ST_HAVE_CUDA
// cuda/'s fused row reductions take CUDA logits in fp32/bf16/fp16 (fp64 stays on the op path).
bool fused_rows(const at::Tensor& logits) {
  const at::ScalarType type = logits.scalar_type();
  return logits.is_cuda() && (type == at::kFloat || type == at::kBFloat16 || type == at::kHalf);
}

StLogitsDtype logits_dtype(const at::Tensor& logits) {
  if (logits.scalar_type() == at::kBFloat16) return ST_LOGITS_BF16;
  return logits.scalar_type() == at::kHalf ? ST_LOGITS_FP16 : ST_LOGITS_FP32;
}
#endif

// The chunk's logits in the weights' dtype, [n, V] contiguous.
at::Tensor raw_logits(const at::Tensor& hidden, const at::Tensor& weight, int64_t start, int64_t length) {
  return at::matmul(hidden.narrow(0, start, length), weight.t()).contiguous();
}

struct ChunkLogits {
  at::Tensor logits;  // [n, V] fp32
  at::Tensor valid;   // [n] bool
  at::Tensor index;   // [n, 1] int64, ignored targets mapped to 0
};

ChunkLogits chunk_logits(const at::Tensor& hidden, const at::Tensor& weight,
                         const at::Tensor& targets, int64_t start, int64_t length) {
  const at::Tensor chunk_targets = targets.narrow(0, start, length);
  return {raw_logits(hidden, weight, start, length).to(reduction_type(weight)), chunk_targets.ne(kIgnoreTarget),
          chunk_targets.clamp_min(0).unsqueeze(1)};
}

// d logp_i / d logits_i = onehot(target_i) - softmax(logits_i), times the incoming gradient, for
// rows [start, start + length), in the compute dtype.
at::Tensor logits_gradient(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets,
                           const at::Tensor& logsumexp, const at::Tensor& grad_logps, int64_t start, int64_t length) {
#if ST_HAVE_CUDA
  if (fused_rows(hidden)) {  // in place over the recomputed logits, in their dtype
    at::Tensor raw = raw_logits(hidden, weight, start, length);
    ST_CHECK_CUDA(st_logsoftmax_gather_backward(raw.data_ptr(), logits_dtype(raw), targets.data_ptr<int64_t>() + start,
                                                logsumexp.data_ptr<float>() + start,
                                                grad_logps.data_ptr<float>() + start, length, raw.size(1),
                                                compat::current_cuda_stream()));
    return raw;
  }
#endif
  const ChunkLogits c = chunk_logits(hidden, weight, targets, start, length);
  const at::Tensor g =
      at::where(c.valid, grad_logps.narrow(0, start, length), at::zeros({length}, grad_logps.options())).unsqueeze(1);
  // softmax in place of the recomputed logits: one [chunk, V] buffer, not two
  at::Tensor d_logits = c.logits.sub_(logsumexp.narrow(0, start, length).unsqueeze(1)).exp_();
  d_logits.mul_(-g).scatter_add_(1, c.index, g);
  return d_logits.to(hidden.scalar_type());
}

class ChunkedTokenLogp : public torch::autograd::Function<ChunkedTokenLogp> {
 public:
  static at::Tensor forward(AutogradContext* context, const at::Tensor& hidden,
                            const at::Tensor& weight, const at::Tensor& targets, int64_t chunk) {
    const int64_t count = hidden.size(0);
    const auto options = hidden.options().dtype(reduction_type(weight));
    const at::Tensor logps = at::empty({count}, options);
    const at::Tensor logsumexp = at::empty({count}, options);
    for (int64_t start = 0; start < count; start += chunk) {
      const int64_t length = std::min(chunk, count - start);
#if ST_HAVE_CUDA
      if (fused_rows(hidden)) {  // one pass over the chunk, no fp32 copy of it
        const at::Tensor raw = raw_logits(hidden, weight, start, length);
        ST_CHECK_CUDA(st_logsumexp_gather(raw.data_ptr(), logits_dtype(raw), targets.data_ptr<int64_t>() + start,
                                          logps.data_ptr<float>() + start, logsumexp.data_ptr<float>() + start,
                                          length, raw.size(1), compat::current_cuda_stream()));
        continue;
      }
#endif
      const ChunkLogits c = chunk_logits(hidden, weight, targets, start, length);
      const at::Tensor lse = c.logits.logsumexp(-1);
      const at::Tensor picked = c.logits.gather(1, c.index).squeeze(1);
      logps.narrow(0, start, length).copy_(at::where(c.valid, picked - lse, at::zeros_like(lse)));
      logsumexp.narrow(0, start, length).copy_(lse);
    }
    context->save_for_backward({hidden, weight, targets, logsumexp});
    context->saved_data["chunk"] = chunk;
    return logps;
  }

  // d logp_i / d logits_i = onehot(target_i) - softmax(logits_i), recomputed chunk by chunk.
  static tensor_list backward(AutogradContext* context, tensor_list grads) {
    const auto saved = context->get_saved_variables();
    const at::Tensor& hidden = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& targets = saved[2];
    const at::Tensor& logsumexp = saved[3];
    const int64_t chunk = context->saved_data["chunk"].toInt();
    const at::Tensor grad_logps = grads[0].to(reduction_type(weight)).contiguous();
    const bool want_hidden = context->needs_input_grad(0);
    const bool want_weight = context->needs_input_grad(1);
    at::Tensor grad_hidden = want_hidden ? at::empty_like(hidden) : at::Tensor();
    at::Tensor grad_weight =
        want_weight ? at::zeros(weight.sizes(), weight.options().dtype(reduction_type(weight)))
                    : at::Tensor();
    const int64_t count = hidden.size(0);
    for (int64_t start = 0; start < count; start += chunk) {
      const int64_t length = std::min(chunk, count - start);
      const at::Tensor d_compute = logits_gradient(hidden, weight, targets, logsumexp, grad_logps, start, length);
      if (want_hidden) grad_hidden.narrow(0, start, length).copy_(at::matmul(d_compute, weight));
      if (want_weight && grad_weight.scalar_type() == hidden.scalar_type()) {
        grad_weight.addmm_(d_compute.t(), hidden.narrow(0, start, length));  // no [V, D] temporary
      } else if (want_weight) {  // bf16/fp16 products summed into the fp32 accumulator
        grad_weight.add_(at::matmul(d_compute.t(), hidden.narrow(0, start, length)));
      }
    }
    if (want_weight) grad_weight = grad_weight.to(weight.scalar_type());
    return {grad_hidden, grad_weight, at::Tensor(), at::Tensor()};
  }
};

void check_shapes(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets) {
  if (hidden.dim() != 2 || weight.dim() != 2 || hidden.size(1) != weight.size(1) ||
      targets.dim() != 1 || targets.size(0) != hidden.size(0)) {
    throw ModelError("token log-probs: expected hidden [N, D], weight [V, D], targets [N]");
  }
}

}  // namespace

at::Tensor chunked_token_logps(const at::Tensor& hidden, const at::Tensor& weight,
                               const at::Tensor& targets, int64_t chunk_tokens) {
  check_shapes(hidden, weight, targets);
  if (chunk_tokens <= 0) throw ModelError("token log-probs: chunk size must be > 0");
  return ChunkedTokenLogp::apply(hidden, weight, targets.to(at::kLong).contiguous(), chunk_tokens);
}

at::Tensor full_logits_token_logps(const at::Tensor& hidden, const at::Tensor& weight,
                                   const at::Tensor& targets) {
  check_shapes(hidden, weight, targets);
  const at::Tensor log_probs =
      at::log_softmax(at::matmul(hidden, weight.t()).to(reduction_type(weight)), -1);
  const at::Tensor valid = targets.ne(kIgnoreTarget);
  const at::Tensor picked =
      log_probs.gather(1, targets.to(at::kLong).clamp_min(0).unsqueeze(1)).squeeze(1);
  return at::where(valid, picked, at::zeros_like(picked));
}

}  // namespace st

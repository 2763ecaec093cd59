#include "model/token_logp.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>

#include "util/errors.h"
#include "util/torch_compat.h"
#if ST_HAVE_CUDA
#include "cuda/gemm_fp32_accumulate.h"
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

// The chunk's logits in the reduction dtype, divided by `temperature` (in that dtype) unless it is 1.
ChunkLogits chunk_logits(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets,
                         double temperature, int64_t start, int64_t length) {
  const at::Tensor chunk_targets = targets.narrow(0, start, length);
  at::Tensor logits = raw_logits(hidden, weight, start, length).to(reduction_type(weight));
  if (temperature != 1.0) logits.div_(temperature);
  return {logits, chunk_targets.ne(kIgnoreTarget), chunk_targets.clamp_min(0).unsqueeze(1)};
}

// -sum p log p of each row of `logits` [n, V] whose logsumexp is `lse` [n], as TRL's
// entropy_from_logits forms it from the log-softmax.
at::Tensor row_entropies(const at::Tensor& logits, const at::Tensor& lse) {
  const at::Tensor log_probs = logits - lse.unsqueeze(1);
  return -(log_probs.exp() * log_probs).sum(-1);
}

// d logp_i / d logits_i = onehot(target_i) - softmax(logits_i), times the incoming gradient, for
// rows [start, start + length), in the compute dtype. With a temperature the logits were divided
// by it, and so is their gradient.
at::Tensor logits_gradient(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets,
                           double temperature, const at::Tensor& logsumexp, const at::Tensor& grad_logps,
                           int64_t start, int64_t length) {
#if ST_HAVE_CUDA
  if (fused_rows(hidden)) {  // in place over the recomputed logits, in their dtype
    at::Tensor raw = raw_logits(hidden, weight, start, length);
    ST_CHECK_CUDA(st_logsoftmax_gather_backward(raw.data_ptr(), logits_dtype(raw), targets.data_ptr<int64_t>() + start,
                                                static_cast<float>(temperature),
                                                logsumexp.data_ptr<float>() + start,
                                                grad_logps.data_ptr<float>() + start, length, raw.size(1),
                                                compat::current_cuda_stream()));
    return raw;
  }
#endif
  const ChunkLogits c = chunk_logits(hidden, weight, targets, temperature, start, length);
  at::Tensor g =
      at::where(c.valid, grad_logps.narrow(0, start, length), at::zeros({length}, grad_logps.options())).unsqueeze(1);
  if (temperature != 1.0) g = g / temperature;
  // softmax in place of the recomputed logits: one [chunk, V] buffer, not two
  at::Tensor d_logits = c.logits.sub_(logsumexp.narrow(0, start, length).unsqueeze(1)).exp_();
  d_logits.mul_(-g).scatter_add_(1, c.index, g);
  return d_logits.to(hidden.scalar_type());
}

// destination [V, D] (+)= d_logits^T @ hidden rows [start, start + length), summed in the
// destination's dtype: in the matmul where the dtypes allow (CPU same dtype, CUDA 16-bit in
// with fp32 out), else as a product added in.
void add_weight_gradient(at::Tensor& destination, const at::Tensor& d_logits, const at::Tensor& hidden,
                         int64_t start, int64_t length, bool overwrite) {
  const at::Tensor rows = hidden.narrow(0, start, length);
  if (destination.scalar_type() == hidden.scalar_type()) {
    if (overwrite) {
      at::mm_out(destination, d_logits.t(), rows);
    } else {
      destination.addmm_(d_logits.t(), rows);  // no [V, D] temporary
    }
    return;
  }
#if ST_HAVE_CUDA
  const at::ScalarType type = hidden.scalar_type();
  if (hidden.is_cuda() && destination.scalar_type() == at::kFloat && destination.is_contiguous() &&
      (type == at::kBFloat16 || type == at::kHalf)) {
    const at::Tensor contiguous_rows = rows.contiguous();
    const int status = st_gemm_tn_fp32_out(d_logits.data_ptr(), contiguous_rows.data_ptr(), destination.data_ptr<float>(),
                                           type == at::kBFloat16 ? ST_GEMM_BF16 : ST_GEMM_FP16, length,
                                           destination.size(0), destination.size(1), overwrite ? 0 : 1,
                                           compat::current_cuda_stream());
    if (status != 0) {
      const char* load_error = st_cublas_load_error();  // why, where cuBLAS could not be opened
      throw ModelError("lm_head weight gradient: " +
                       (load_error ? std::string(load_error) : "cuBLAS status " + std::to_string(status)));
    }
    return;
  }
#endif
  const at::Tensor product = at::matmul(d_logits.t(), rows);  // bf16/fp16 product into the wider sum
  if (overwrite) {
    destination.copy_(product);
  } else {
    destination.add_(product);
  }
}

class ChunkedTokenLogp : public torch::autograd::Function<ChunkedTokenLogp> {
 public:
  // Returns {logps [N], entropies ([N] when `entropies`, else empty; not differentiable)}.
  static tensor_list forward(AutogradContext* context, const at::Tensor& hidden, const at::Tensor& weight,
                             const at::Tensor& targets, int64_t chunk, double temperature, bool entropies,
                             const at::Tensor& sink, bool overwrite) {
    const int64_t count = hidden.size(0);
    const auto options = hidden.options().dtype(reduction_type(weight));
    const at::Tensor logps = at::empty({count}, options);
    const at::Tensor logsumexp = at::empty({count}, options);
    const at::Tensor entropy = at::empty({entropies ? count : 0}, options);
    for (int64_t start = 0; start < count; start += chunk) {
      const int64_t length = std::min(chunk, count - start);
#if ST_HAVE_CUDA
      if (fused_rows(hidden)) {  // one pass over the chunk (two with entropies), no fp32 copy of it
        const at::Tensor raw = raw_logits(hidden, weight, start, length);
        ST_CHECK_CUDA(st_logsumexp_gather(raw.data_ptr(), logits_dtype(raw), targets.data_ptr<int64_t>() + start,
                                          static_cast<float>(temperature), logps.data_ptr<float>() + start,
                                          logsumexp.data_ptr<float>() + start,
                                          entropies ? entropy.data_ptr<float>() + start : nullptr, length,
                                          raw.size(1), compat::current_cuda_stream()));
        continue;
      }
#endif
      const ChunkLogits c = chunk_logits(hidden, weight, targets, temperature, start, length);
      const at::Tensor lse = c.logits.logsumexp(-1);
      const at::Tensor picked = c.logits.gather(1, c.index).squeeze(1);
      logps.narrow(0, start, length).copy_(at::where(c.valid, picked - lse, at::zeros_like(lse)));
      logsumexp.narrow(0, start, length).copy_(lse);
      if (entropies) entropy.narrow(0, start, length).copy_(row_entropies(c.logits, lse));
    }
    context->save_for_backward({hidden, weight, targets, logsumexp});
    context->saved_data["chunk"] = chunk;
    context->saved_data["temperature"] = temperature;
    context->saved_data["sink"] = sink.numel() > 0 ? sink : at::Tensor();
    context->saved_data["overwrite"] = overwrite;
    context->mark_non_differentiable({entropy});
    return {logps, entropy};
  }

  // d logp_i / d logits_i = onehot(target_i) - softmax(logits_i), recomputed chunk by chunk.
  static tensor_list backward(AutogradContext* context, tensor_list grads) {
    const auto saved = context->get_saved_variables();
    const at::Tensor& hidden = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& targets = saved[2];
    const at::Tensor& logsumexp = saved[3];
    const int64_t chunk = context->saved_data["chunk"].toInt();
    const double temperature = context->saved_data["temperature"].toDouble();
    const at::Tensor grad_logps = grads[0].to(reduction_type(weight)).contiguous();
    at::Tensor sink = context->saved_data["sink"].toTensor();
    bool overwrite = sink.defined() && context->saved_data["overwrite"].toBool();
    const bool want_hidden = context->needs_input_grad(0);
    const bool want_weight = context->needs_input_grad(1) || sink.defined();
    at::Tensor grad_hidden = want_hidden ? at::empty_like(hidden) : at::Tensor();
    at::Tensor grad_weight = sink.defined() ? sink
                             : want_weight ? at::zeros(weight.sizes(), weight.options().dtype(reduction_type(weight)))
                                           : at::Tensor();
    const int64_t count = hidden.size(0);
    for (int64_t start = 0; start < count; start += chunk) {
      const int64_t length = std::min(chunk, count - start);
      const at::Tensor d_compute =
          logits_gradient(hidden, weight, targets, temperature, logsumexp, grad_logps, start, length);
      if (want_hidden) grad_hidden.narrow(0, start, length).copy_(at::matmul(d_compute, weight));
      if (want_weight) add_weight_gradient(grad_weight, d_compute, hidden, start, length, overwrite);
      overwrite = false;
    }
    if (overwrite) grad_weight.zero_();  // no rows: the step's first contribution is zero
    const at::Tensor none;
    if (sink.defined()) return {grad_hidden, none, none, none, none, none, none, none};
    if (want_weight) grad_weight = grad_weight.to(weight.scalar_type());
    return {grad_hidden, grad_weight, none, none, none, none, none, none};
  }
};

void check_shapes(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets) {
  if (hidden.dim() != 2 || weight.dim() != 2 || hidden.size(1) != weight.size(1) ||
      targets.dim() != 1 || targets.size(0) != hidden.size(0)) {
    throw ModelError("token log-probs: expected hidden [N, D], weight [V, D], targets [N]");
  }
}

}  // namespace

TokenLogps chunked_token_logps(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets,
                               const TokenLogpOptions& options) {
  check_shapes(hidden, weight, targets);
  if (options.chunk_tokens <= 0) throw ModelError("token log-probs: chunk size must be > 0");
  if (!(options.temperature > 0.0)) throw ModelError("token log-probs: the temperature must be > 0");
  const WeightGradSink& sink = options.sink;
  if (sink.destination.defined() &&
      (sink.destination.sizes() != weight.sizes() || sink.destination.scalar_type() != reduction_type(weight))) {
    throw ModelError("token log-probs: the weight-gradient sink must be [V, D] in the reduction dtype");
  }
  // An empty tensor stands for "no sink": libtorch 1.13 takes no undefined tensor arguments.
  const at::Tensor destination = sink.destination.defined() ? sink.destination : at::empty({0}, weight.options());
  const tensor_list outputs =
      ChunkedTokenLogp::apply(hidden, weight, targets.to(at::kLong).contiguous(), options.chunk_tokens,
                              options.temperature, options.entropies, destination, sink.overwrite);
  return {outputs[0], options.entropies ? outputs[1] : at::Tensor()};
}

at::Tensor chunked_token_logps(const at::Tensor& hidden, const at::Tensor& weight,
                               const at::Tensor& targets, int64_t chunk_tokens, const WeightGradSink& sink) {
  TokenLogpOptions options;
  options.chunk_tokens = chunk_tokens;
  options.sink = sink;
  return chunked_token_logps(hidden, weight, targets, options).logps;
}

at::Tensor full_logits_token_logps(const at::Tensor& hidden, const at::Tensor& weight,
                                   const at::Tensor& targets, double temperature) {
  check_shapes(hidden, weight, targets);
  const at::Tensor log_probs =
      at::log_softmax(at::matmul(hidden, weight.t()).to(reduction_type(weight)) / temperature, -1);
  const at::Tensor valid = targets.ne(kIgnoreTarget);
  const at::Tensor picked =
      log_probs.gather(1, targets.to(at::kLong).clamp_min(0).unsqueeze(1)).squeeze(1);
  return at::where(valid, picked, at::zeros_like(picked));
}

}  // namespace st

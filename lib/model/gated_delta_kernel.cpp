#include "model/gated_delta_kernel.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <stdexcept>

#include "util/torch_compat.h"
#if ST_HAVE_CUDA
#include "cuda/gated_delta_rule.h"
#include "util/check_cuda.h"
#endif

namespace st {
namespace {

#if ST_HAVE_CUDA
using Problem = st_gated_delta::Problem<float>;

bool cuda_fp32(const at::Tensor& t) { return t.is_cuda() && t.scalar_type() == at::kFloat; }

// Autograd functions take no undefined tensor argument (libtorch 2.x: "tensor does not have a
// device"): an absent initial state or chunk table travels as an empty placeholder.
at::Tensor placeholder_for(const at::Tensor& t, const at::Tensor& like) {
  return t.defined() ? t : at::empty({0}, like.options());
}

bool present(const at::Tensor& t) { return t.defined() && t.numel() > 0; }

const float* data_or_null(const at::Tensor& t) { return present(t) ? t.data_ptr<float>() : nullptr; }

// The problem's shape and inputs; q, k, v, g, beta, initial_state contiguous fp32; chunk_first
// and chunk_opens packed rows' chunk table on the device (empty: one sequence per row).
Problem problem_of(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& g,
                   const at::Tensor& beta, const at::Tensor& initial_state, int64_t chunk,
                   const at::Tensor& chunk_first, const at::Tensor& chunk_opens) {
  Problem p;
  p.heads = q.size(0) * q.size(1);
  p.length = q.size(2);
  p.key_dim = q.size(3);
  p.value_dim = v.size(3);
  p.chunk = chunk;
  p.q = q.data_ptr<float>(), p.k = k.data_ptr<float>(), p.v = v.data_ptr<float>();
  p.g = g.data_ptr<float>(), p.beta = beta.data_ptr<float>();
  p.initial_state = data_or_null(initial_state);
  if (present(chunk_first)) {
    p.chunk_first = chunk_first.data_ptr<int64_t>();
    p.chunk_opens = chunk_opens.data_ptr<uint8_t>();
    p.chunks = chunk_first.numel() - 1;
  }
  return p;
}

at::Tensor workspace_for(const Problem& p, bool backward, const at::Tensor& like) {
  return at::empty({st_gated_delta::workspace_elements(p, backward)}, like.options());
}

at::Tensor state_shaped(const at::Tensor& q, const at::Tensor& v) {
  return at::empty({q.size(0), q.size(1), q.size(3), v.size(3)}, q.options());
}

class GatedDeltaKernel : public torch::autograd::Function<GatedDeltaKernel> {
 public:
  // Inputs contiguous fp32 CUDA tensors (initial_state and the chunk table may be empty);
  // returns {out, final_state}.
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* context, const at::Tensor& q,
                                                const at::Tensor& k, const at::Tensor& v, const at::Tensor& g,
                                                const at::Tensor& beta, const at::Tensor& initial_state,
                                                int64_t chunk, const at::Tensor& chunk_first,
                                                const at::Tensor& chunk_opens) {
    Problem p = problem_of(q, k, v, g, beta, initial_state, chunk, chunk_first, chunk_opens);
    const at::Tensor out = at::empty_like(v), final_state = state_shaped(q, v);
    const at::Tensor workspace = workspace_for(p, false, q);
    p.out = out.data_ptr<float>(), p.final_state = final_state.data_ptr<float>();
    p.workspace = workspace.data_ptr<float>();
    ST_CHECK_CUDA(st_gated_delta_forward(p, compat::current_cuda_stream()));
    context->save_for_backward({q, k, v, g, beta, initial_state});
    context->saved_data["chunk"] = chunk;
    context->saved_data["chunk_first"] = chunk_first;
    context->saved_data["chunk_opens"] = chunk_opens;
    return {out, final_state};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* context,
                                                 torch::autograd::variable_list grads) {
    const auto saved = context->get_saved_variables();
    const at::Tensor &q = saved[0], &k = saved[1], &v = saved[2], &g = saved[3], &beta = saved[4];
    const at::Tensor& initial_state = saved[5];
    Problem p = problem_of(q, k, v, g, beta, initial_state, context->saved_data["chunk"].toInt(),
                           context->saved_data["chunk_first"].toTensor(), context->saved_data["chunk_opens"].toTensor());
    const at::Tensor grad_out = grads[0].defined() ? grads[0].to(at::kFloat).contiguous() : at::zeros_like(v);
    const at::Tensor grad_final = grads[1].defined() ? grads[1].to(at::kFloat).contiguous() : at::Tensor();
    // The backward reruns the state scan, which writes the final state again (its own scratch);
    // the outputs are not rewritten.
    const at::Tensor final_state = state_shaped(q, v);
    const at::Tensor dq = at::empty_like(q), dk = at::empty_like(k), dv = at::empty_like(v);
    const at::Tensor dg = at::empty_like(g), dbeta = at::empty_like(beta);
    const at::Tensor d_initial = present(initial_state) ? at::empty_like(initial_state) : at::Tensor();
    const at::Tensor workspace = workspace_for(p, true, q);
    p.final_state = final_state.data_ptr<float>();
    p.grad_out = grad_out.data_ptr<float>(), p.grad_final_state = data_or_null(grad_final);
    p.grad_q = dq.data_ptr<float>(), p.grad_k = dk.data_ptr<float>(), p.grad_v = dv.data_ptr<float>();
    p.grad_g = dg.data_ptr<float>(), p.grad_beta = dbeta.data_ptr<float>();
    p.grad_initial_state = d_initial.defined() ? d_initial.data_ptr<float>() : nullptr;
    p.workspace = workspace.data_ptr<float>();
    ST_CHECK_CUDA(st_gated_delta_backward(p, compat::current_cuda_stream()));
    return {dq, dk, dv, dg, dbeta, d_initial, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};
#endif

}  // namespace

bool gated_delta_kernel_applies(const GatedDeltaInputs& in) {
#if ST_HAVE_CUDA
  return cuda_fp32(in.q) && cuda_fp32(in.k) && cuda_fp32(in.v) && cuda_fp32(in.g) && cuda_fp32(in.beta) &&
         (!in.initial_state.defined() || cuda_fp32(in.initial_state));
#else
  (void)in;
  return false;
#endif
}

GatedDeltaOutputs gated_delta_rule_kernel(const GatedDeltaInputs& in, int64_t chunk,
                                          const std::vector<int64_t>* sequence_starts) {
#if ST_HAVE_CUDA
  at::Tensor state, chunk_first, chunk_opens;  // packed rows start from zeros: no initial state
  if (sequence_starts) {
    const st_gated_delta::ChunkTable table = st_gated_delta::chunk_table(*sequence_starts, chunk);
    chunk_first = at::tensor(table.first, at::kLong).to(in.q.device());
    chunk_opens = at::tensor(table.opens, at::kByte).to(in.q.device());
  } else if (in.initial_state.defined()) {
    state = in.initial_state.contiguous();
  }
  const torch::autograd::variable_list outs = GatedDeltaKernel::apply(
      in.q.contiguous(), in.k.contiguous(), in.v.contiguous(), in.g.contiguous(), in.beta.contiguous(),
      placeholder_for(state, in.q), chunk, placeholder_for(chunk_first, in.q), placeholder_for(chunk_opens, in.q));
  return {outs[0], sequence_starts ? at::Tensor() : outs[1]};
#else
  (void)in;
  (void)chunk;
  (void)sequence_starts;
  throw std::logic_error("gated_delta_rule_kernel: built without CUDA");
#endif
}

}  // namespace st

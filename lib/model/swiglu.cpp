#include "model/swiglu.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <stdexcept>

#include "util/torch_compat.h"
#if ST_HAVE_CUDA
#include "cuda/swiglu.h"
#include "model/activation_kernels.h"
#include "util/check_cuda.h"
#endif

namespace st {
namespace {

#if ST_HAVE_CUDA
// The [rows, width] view the kernel reads, when `t` has one: unit column stride and every
// leading dimension packed over the rows (a chunk of a fused [.., 2I] output qualifies).
bool rows_view(const at::Tensor& t, StRows& rows) {
  if (t.dim() < 1 || t.stride(-1) != 1) return false;
  const int64_t last = t.dim() - 1;
  const int64_t row_stride = last >= 1 ? t.stride(last - 1) : t.size(last);
  for (int64_t d = last - 2; d >= 0; --d) {
    if (t.size(d) != 1 && t.stride(d) != t.stride(d + 1) * t.size(d + 1)) return false;
  }
  rows = {t.data_ptr(), row_stride};
  return true;
}

bool fused(const at::Tensor& gate, const at::Tensor& up) {
  StRows unused{};
  return kernel_activation(gate) && up.is_cuda() && up.scalar_type() == gate.scalar_type() &&
         gate.sizes() == up.sizes() && rows_view(gate, unused) && rows_view(up, unused);
}

class FusedSwiglu : public torch::autograd::Function<FusedSwiglu> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* context, const at::Tensor& gate, const at::Tensor& up) {
    context->save_for_backward({gate, up});
    StRows g{}, u{};
    rows_view(gate, g);
    rows_view(up, u);
    const int64_t width = gate.size(-1);
    const at::Tensor out = at::empty(gate.sizes(), gate.options().memory_format(at::MemoryFormat::Contiguous));
    ST_CHECK_CUDA(st_swiglu_forward(g, u, out.data_ptr(), activation_dtype(gate), rows_of(gate), width,
                                    compat::current_cuda_stream()));
    return out;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* context,
                                               torch::autograd::tensor_list grads) {
    const auto saved = context->get_saved_variables();
    const at::Tensor& gate = saved[0];
    const at::Tensor& up = saved[1];
    StRows g{}, u{};
    rows_view(gate, g);
    rows_view(up, u);
    const at::Tensor grad_out = grads[0].contiguous();
    const at::Tensor grad_gate = at::empty(gate.sizes(), grad_out.options());
    const at::Tensor grad_up = at::empty(up.sizes(), grad_out.options());
    const int64_t width = gate.size(-1);
    ST_CHECK_CUDA(st_swiglu_backward(g, u, grad_out.data_ptr(), grad_gate.data_ptr(), grad_up.data_ptr(),
                                     activation_dtype(gate), rows_of(gate), width, compat::current_cuda_stream()));
    return {grad_gate, grad_up};
  }
};
#endif

}  // namespace

at::Tensor swiglu_reference(const at::Tensor& gate, const at::Tensor& up) { return at::silu(gate) * up; }

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up) {
#if ST_HAVE_CUDA
  if (fused(gate, up)) return FusedSwiglu::apply(gate, up);
#endif
  return swiglu_reference(gate, up);
}

at::Tensor gated_activation(const at::Tensor& gate, const at::Tensor& up, Activation activation) {
  switch (activation) {
    case Activation::silu: return swiglu(gate, up);
    case Activation::gelu_tanh: return at::gelu(gate, "tanh") * up;
  }
  throw std::logic_error("gated_activation: unknown activation");
}

}  // namespace st

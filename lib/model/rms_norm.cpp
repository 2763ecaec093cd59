#include "model/rms_norm.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include "util/torch_compat.h"
#if ST_HAVE_CUDA
#include "cuda/rms_norm.h"
#include "model/activation_kernels.h"
#include "util/check_cuda.h"
#endif

namespace st {
namespace {

#if ST_HAVE_CUDA
bool fused(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight) {
  const at::ScalarType type = x.scalar_type();
  const bool residual_ok = !residual.defined() || (residual.is_cuda() && residual.scalar_type() == type &&
                                                   residual.sizes() == x.sizes() && residual.is_contiguous());
  return kernel_activation(x) && x.is_contiguous() && x.dim() >= 1 && residual_ok && weight.is_cuda() &&
         weight.scalar_type() == type && weight.dim() == 1 && weight.size(0) == x.size(-1) && weight.is_contiguous();
}

// Outputs: {sum, normed} with a residual, {normed} without. Without one, `residual` is an empty
// placeholder: autograd functions take no undefined tensor arguments.
class FusedRmsNorm : public torch::autograd::Function<FusedRmsNorm> {
 public:
  static torch::autograd::tensor_list forward(torch::autograd::AutogradContext* context, const at::Tensor& x,
                                              const at::Tensor& residual, bool with_residual,
                                              const at::Tensor& weight, double eps) {
    const int64_t rows = rows_of(x), width = x.size(-1);
    const at::Tensor sum = with_residual ? at::empty_like(x) : at::Tensor();
    const at::Tensor normed = at::empty_like(x);
    const at::Tensor rstd = at::empty({rows}, x.options().dtype(at::kFloat));
    ST_CHECK_CUDA(st_rms_norm_forward(x.data_ptr(), with_residual ? residual.data_ptr() : nullptr, weight.data_ptr(),
                                      with_residual ? sum.data_ptr() : nullptr, normed.data_ptr(),
                                      rstd.data_ptr<float>(), activation_dtype(x), rows, width,
                                      static_cast<float>(eps), compat::current_cuda_stream()));
    context->save_for_backward({with_residual ? sum : x, weight, rstd});
    context->saved_data["with_residual"] = with_residual;
    if (with_residual) return {sum, normed};
    return {normed};
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* context,
                                               torch::autograd::tensor_list grads) {
    const bool with_residual = context->saved_data["with_residual"].toBool();
    const auto saved = context->get_saved_variables();
    const at::Tensor& input = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& rstd = saved[2];
    const at::Tensor grad_normed = (with_residual ? grads[1] : grads[0]);
    const at::Tensor grad_out = grad_normed.defined() ? grad_normed.contiguous() : at::zeros_like(input);
    const at::Tensor grad_sum = with_residual && grads[0].defined() ? grads[0].contiguous() : at::Tensor();
    const int64_t rows = rows_of(input), width = input.size(-1);
    const at::Tensor grad_input = at::empty_like(input);
    const at::Tensor partials = at::empty({st_rms_norm_partial_rows(rows), width}, input.options().dtype(at::kFloat));
    const at::Tensor grad_weight = at::empty_like(weight);
    ST_CHECK_CUDA(st_rms_norm_backward(grad_out.data_ptr(), grad_sum.defined() ? grad_sum.data_ptr() : nullptr,
                                       input.data_ptr(), weight.data_ptr(), rstd.data_ptr<float>(),
                                       grad_input.data_ptr(), partials.data_ptr<float>(), grad_weight.data_ptr(),
                                       activation_dtype(input), rows, width, compat::current_cuda_stream()));
    // x and residual get the same gradient (d sum / d x = d sum / d residual = 1).
    return {grad_input, with_residual ? grad_input : at::Tensor(), at::Tensor(), grad_weight, at::Tensor()};
  }
};
#endif

}  // namespace

at::Tensor rms_norm_reference(const at::Tensor& x, const at::Tensor& weight, double eps, NormStyle style) {
  if (style == NormStyle::one_plus_weight) {
    // transformers' Gemma norm, in fp32 (fp64 for fp64 inputs, where fp32 would only lose digits).
    const at::ScalarType wide = at::promote_types(x.scalar_type(), at::kFloat);
    const at::Tensor xw = x.to(wide);
    const at::Tensor normed = xw * at::rsqrt(xw.pow(2).mean(-1, /*keepdim=*/true) + eps);
    return (normed * (1.0 + weight.to(wide))).to(x.scalar_type());
  }
  const at::Tensor x32 = x.to(at::kFloat);
  const at::Tensor normed = x32 * at::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * normed.to(x.scalar_type());
}

NormedSum add_rms_norm_reference(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                                 double eps, NormStyle style) {
  const at::Tensor sum = x + residual;
  return {sum, rms_norm_reference(sum, weight, eps, style)};
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps, NormStyle style) {
#if ST_HAVE_CUDA
  if (style == NormStyle::weight && fused(x, at::Tensor(), weight)) {
    return FusedRmsNorm::apply(x, at::empty({0}, x.options()), false, weight, eps)[0];
  }
#endif
  return rms_norm_reference(x, weight, eps, style);
}

NormedSum add_rms_norm(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight, double eps,
                       NormStyle style) {
#if ST_HAVE_CUDA
  if (style == NormStyle::weight && fused(x, residual, weight)) {
    const torch::autograd::tensor_list outputs = FusedRmsNorm::apply(x, residual, true, weight, eps);
    return {outputs[0], outputs[1]};
  }
#endif
  return add_rms_norm_reference(x, residual, weight, eps, style);
}

}  // namespace st

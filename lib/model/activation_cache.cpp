#include "model/activation_cache.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include "util/errors.h"

namespace st {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// linear(x, weight, bias), or `recorded` standing for it (a non-empty tensor), with the one
// backward of activation_cache.h. The products run on contiguous [N, *] operands so their
// layout, and with it the BLAS call, cannot depend on how the upstream graph left strides.
class FixedLinear : public torch::autograd::Function<FixedLinear> {
 public:
  static at::Tensor forward(AutogradContext* context, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias, const at::Tensor& recorded) {
    const bool has_bias = bias.numel() > 0;
    context->save_for_backward({x, weight});
    context->saved_data["has_bias"] = has_bias;
    if (recorded.numel() > 0) return recorded;
    return at::linear(x, weight, has_bias ? bias : at::Tensor());
  }

  static tensor_list backward(AutogradContext* context, tensor_list grads) {
    const auto saved = context->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor grad = grads[0].reshape({-1, weight.size(0)}).contiguous();
    at::Tensor grad_x, grad_weight, grad_bias;
    if (context->needs_input_grad(0)) grad_x = grad.mm(weight.contiguous()).view(x.sizes());
    if (context->needs_input_grad(1)) grad_weight = grad.t().mm(x.reshape({-1, weight.size(1)}).contiguous());
    if (context->saved_data["has_bias"].toBool() && context->needs_input_grad(2)) grad_bias = grad.sum(0);
    return {grad_x, grad_weight, grad_bias, at::Tensor()};
  }
};

// An empty tensor stands for "none": libtorch 1.13 takes no undefined tensor arguments.
at::Tensor or_empty(const at::Tensor& t, const at::Tensor& like) {
  return t.defined() ? t : at::empty({0}, like.options());
}

at::Tensor fixed_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                        const at::Tensor& recorded) {
  return FixedLinear::apply(x, weight, or_empty(bias, weight), or_empty(recorded, weight));
}

}  // namespace

ActivationCache::ActivationCache(std::vector<at::Tensor> recorded)
    : mode_(Mode::replay), outputs_(recorded.begin(), recorded.end()) {}

std::vector<at::Tensor> ActivationCache::take_recorded() {
  std::vector<at::Tensor> recorded(outputs_.begin(), outputs_.end());
  outputs_.clear();
  return recorded;
}

at::Tensor ActivationCache::linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  if (mode_ == Mode::record) {
    at::Tensor output = linear_op(x, weight, bias, nullptr);
    outputs_.push_back(output);
    return output;
  }
  if (outputs_.empty()) throw ModelError("selective recompute: more matmuls replayed than recorded");
  at::Tensor recorded = outputs_.front();
  outputs_.pop_front();
  return fixed_linear(x, weight, bias, recorded);
}

at::Tensor linear_op(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, ActivationCache* cache) {
  if (cache) return cache->linear(x, weight, bias);
  // Without grad mode nothing is recorded: the plain op, as the function's forward computes it.
  if (!at::GradMode::is_enabled()) return at::linear(x, weight, bias);
  return fixed_linear(x, weight, bias, at::Tensor());
}

}  // namespace st

#include "model/activation_cache.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include "util/errors.h"

namespace st {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// The recorded output as the result of linear(x, weight, bias); backward is at::linear's
// (the same mm calls autograd makes for it, so gradients match a recompute bit for bit).
class ReplayedLinear : public torch::autograd::Function<ReplayedLinear> {
 public:
  static at::Tensor forward(AutogradContext* context, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias, const at::Tensor& recorded) {
    context->save_for_backward({x, weight});
    context->saved_data["has_bias"] = bias.numel() > 0;
    return recorded;
  }

  static tensor_list backward(AutogradContext* context, tensor_list grads) {
    const auto saved = context->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor grad = grads[0].reshape({-1, weight.size(0)});
    at::Tensor grad_x, grad_weight, grad_bias;
    if (context->needs_input_grad(0)) grad_x = grad.mm(weight).view(x.sizes());
    if (context->needs_input_grad(1)) grad_weight = x.reshape({-1, weight.size(1)}).t().mm(grad).t();
    if (context->saved_data["has_bias"].toBool() && context->needs_input_grad(2)) grad_bias = grad.sum(0);
    return {grad_x, grad_weight, grad_bias, at::Tensor()};
  }
};

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
    at::Tensor output = at::linear(x, weight, bias);
    outputs_.push_back(output);
    return output;
  }
  if (outputs_.empty()) throw ModelError("selective recompute: more matmuls replayed than recorded");
  at::Tensor recorded = outputs_.front();
  outputs_.pop_front();
  // An empty tensor stands for "no bias": libtorch 1.13 takes no undefined tensor arguments.
  return ReplayedLinear::apply(x, weight, bias.defined() ? bias : at::empty({0}, weight.options()), recorded);
}

at::Tensor linear_op(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, ActivationCache* cache) {
  return cache ? cache->linear(x, weight, bias) : at::linear(x, weight, bias);
}

}  // namespace st

#include "model/context_exchange.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

namespace st {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

ContextExchange& exchange_at(int64_t address) { return *reinterpret_cast<ContextExchange*>(address); }

// The exchange travels by address: the batch that holds it outlives its forward and backward.
class GatherContext : public torch::autograd::Function<GatherContext> {
 public:
  static at::Tensor forward(AutogradContext* context, const at::Tensor& part, int64_t address) {
    ContextExchange& exchange = exchange_at(address);
    context->saved_data["exchange"] = address;
    const at::Tensor local = part.contiguous();
    std::vector<int64_t> shape = local.sizes().vec();
    shape[0] *= exchange.size();
    at::Tensor full = at::empty(shape, local.options());
    exchange.all_gather(full, local);
    return full;
  }

  static tensor_list backward(AutogradContext* context, tensor_list grads) {
    ContextExchange& exchange = exchange_at(context->saved_data["exchange"].toInt());
    const at::Tensor full = grads[0].contiguous();
    std::vector<int64_t> shape = full.sizes().vec();
    shape[0] /= exchange.size();
    at::Tensor part = at::empty(shape, full.options());
    exchange.reduce_scatter_sum(part, full);
    return {part, at::Tensor()};
  }
};

class SumOverContext : public torch::autograd::Function<SumOverContext> {
 public:
  static at::Tensor forward(AutogradContext*, const at::Tensor& partial, int64_t address) {
    at::Tensor sum = partial.clone(at::MemoryFormat::Contiguous);
    exchange_at(address).all_reduce_sum(sum);
    return sum;
  }

  static tensor_list backward(AutogradContext*, tensor_list grads) { return {grads[0], at::Tensor()}; }
};

int64_t address_of(const std::shared_ptr<ContextExchange>& exchange) {
  return reinterpret_cast<int64_t>(exchange.get());
}

}  // namespace

at::Tensor gather_context(const std::shared_ptr<ContextExchange>& exchange, const at::Tensor& part) {
  return GatherContext::apply(part, address_of(exchange));
}

at::Tensor sum_over_context(const std::shared_ptr<ContextExchange>& exchange, const at::Tensor& partial) {
  return SumOverContext::apply(partial, address_of(exchange));
}

}  // namespace st

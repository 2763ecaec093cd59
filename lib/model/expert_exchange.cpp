#include "model/expert_exchange.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <numeric>

#include "util/errors.h"

namespace st {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

at::Tensor all_to_all_rows(ExpertExchange& exchange, const at::Tensor& rows, const std::vector<int64_t>& send,
                           const std::vector<int64_t>& receive) {
  const at::Tensor input = rows.contiguous();
  std::vector<int64_t> shape = input.sizes().vec();
  shape[0] = std::accumulate(receive.begin(), receive.end(), int64_t{0});
  at::Tensor output = at::empty(shape, input.options());
  exchange.all_to_all(output, input, receive, send);
  return output;
}

// The exchange travels by address: the batch that holds it outlives its forward and backward.
class ExchangeRows : public torch::autograd::Function<ExchangeRows> {
 public:
  static at::Tensor forward(AutogradContext* context, const at::Tensor& rows, int64_t address,
                            std::vector<int64_t> send, std::vector<int64_t> receive) {
    auto& exchange = *reinterpret_cast<ExpertExchange*>(address);
    context->saved_data["exchange"] = address;
    context->saved_data["send"] = send;
    context->saved_data["receive"] = receive;
    return all_to_all_rows(exchange, rows, send, receive);
  }

  static tensor_list backward(AutogradContext* context, tensor_list grads) {
    auto& exchange = *reinterpret_cast<ExpertExchange*>(context->saved_data["exchange"].toInt());
    const at::Tensor back = all_to_all_rows(exchange, grads[0], context->saved_data["receive"].toIntVector(),
                                            context->saved_data["send"].toIntVector());
    return {back, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor exchange_expert_counts(ExpertExchange& exchange, const at::Tensor& counts) {
  const int ranks = exchange.size();
  if (counts.numel() % ranks != 0) {
    throw ModelError("expert parallelism: " + std::to_string(counts.numel()) + " experts do not split over " +
                     std::to_string(ranks) + " ranks");
  }
  const int64_t local = counts.numel() / ranks;
  const at::Tensor sent = counts.to(at::kLong).reshape({ranks, local}).contiguous();
  at::Tensor received = at::empty_like(sent);
  const std::vector<int64_t> one_row_each(static_cast<size_t>(ranks), 1);
  exchange.all_to_all(received, sent, one_row_each, one_row_each);
  return received.cpu();
}

at::Tensor exchange_rows(const std::shared_ptr<ExpertExchange>& exchange, const at::Tensor& rows,
                         const std::vector<int64_t>& send, const std::vector<int64_t>& receive) {
  return ExchangeRows::apply(rows, reinterpret_cast<int64_t>(exchange.get()), send, receive);
}

}  // namespace st

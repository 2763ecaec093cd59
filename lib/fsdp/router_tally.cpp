#include "fsdp/router_tally.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include "util/errors.h"

namespace st {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// E x sum_e F_e x P_e from the tally's probabilities: F_e (a top-k's share) has no gradient,
// so d loss / d p_e is the same for every token of weight 1: E x F_e / rows.
class RouterLossFunction : public torch::autograd::Function<RouterLossFunction> {
 public:
  static at::Tensor forward(AutogradContext* context, const at::Tensor& output, const at::Tensor& expert_grad,
                            int64_t tally_address) {
    const auto& tally = *reinterpret_cast<const c10::intrusive_ptr<RouterTally>*>(tally_address);
    context->saved_data["tally"] = c10::IValue::make_capsule(tally);
    context->saved_data["expert_grad"] = expert_grad;
    context->saved_data["output_shape"] = output.sizes().vec();
    return (tally->probabilities.sum(0) * expert_grad).sum();
  }

  static tensor_list backward(AutogradContext* context, tensor_list grads) {
    const auto tally = c10::static_intrusive_pointer_cast<RouterTally>(context->saved_data["tally"].toCapsule());
    tally->expert_grad = context->saved_data["expert_grad"].toTensor() * grads[0];
    const auto shape = context->saved_data["output_shape"].toIntVector();
    // The output gets no gradient from here; a defined zero keeps the units' backwards after this one.
    return {at::zeros(shape, grads[0].options()), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

RouterTally::RouterTally(const ModelConfig& config, at::Tensor weights)
    : token_weights(std::move(weights)), experts(config.experts.num_experts) {
  const auto options = token_weights.options().dtype(at::kFloat);
  picks = at::zeros({config.sparse_layer_count(), experts}, options);
  probabilities = at::zeros({config.sparse_layer_count(), experts}, options);
  int64_t slot = 0;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    slot_of_layer.push_back(config.sparse_layer(layer) ? slot++ : -1);
  }
}

void RouterTally::add(int64_t layer, const Routing& routing) {
  const int64_t slot = slot_of_layer.at(static_cast<size_t>(layer));
  if (slot < 0) throw ModelError("router tally: layer " + std::to_string(layer) + " has no experts");
  if (routing.probs.size(0) != token_weights.size(0)) {
    throw ModelError("router tally: " + std::to_string(routing.probs.size(0)) + " routed tokens, " +
                     std::to_string(token_weights.size(0)) + " token weights");
  }
  const at::NoGradGuard no_grad;
  const int64_t k = routing.experts.size(1);
  picks[slot].index_add_(0, routing.experts.reshape(-1), token_weights.repeat_interleave(k));
  probabilities[slot].add_((routing.probs.detach() * token_weights.unsqueeze(1)).sum(0));
}

at::Tensor RouterTally::probability_grad() const {
  if (!expert_grad.defined()) return {};
  return token_weights.unsqueeze(1) * expert_grad.unsqueeze(0);
}

RouterLoss router_loss(const c10::intrusive_ptr<RouterTally>& tally, const at::Tensor& output,
                       const std::vector<Communicator*>& data_parallel) {
  // rows = sparse layers x weighted tokens (a micro-batch of padding alone has none: loss 0).
  const at::Tensor rows = (tally->token_weights.sum() * static_cast<double>(tally->picks.size(0))).clamp_min(1.0);
  const at::Tensor shares = tally->picks.sum(0) / rows;  // F_e
  // d loss / d (a token's p_e) = E x F_e / rows, for a token of weight 1.
  const at::Tensor expert_grad = shares * static_cast<double>(tally->experts) / rows;
  RouterLoss loss;
  loss.loss = RouterLossFunction::apply(output, expert_grad, reinterpret_cast<int64_t>(&tally));
  loss.picks = tally->picks.clone();
  for (Communicator* group : data_parallel) {
    if (group != nullptr && group->size() > 1) group->all_reduce(loss.picks, ReduceOp::sum);
  }
  return loss;
}

}  // namespace st

#include "optim/sharded_adamw.h"

#include <ATen/ATen.h>

#include <cmath>

namespace st {

ShardedAdamW::ShardedAdamW(const std::vector<UnitLayout>& units, int rank, const OptimOptions& options)
    : options_(options) {
  for (const UnitLayout& unit : units) {
    m_.push_back(at::zeros({unit.shard_numel}, at::kFloat));
    v_.push_back(at::zeros({unit.shard_numel}, at::kFloat));
    at::Tensor mask = at::zeros({unit.shard_numel}, at::kFloat);
    for (const ParamSlot& slot : unit.params) {
      if (slot.spec.shape.size() < 2) continue;  // norms and biases: no decay
      const SlotOverlap part = overlap(slot, unit.shard_offset(rank), unit.shard_numel);
      if (part.length > 0) mask.narrow(0, part.range_offset, part.length).fill_(1.0);
    }
    decay_mask_.push_back(mask);
  }
}

void ShardedAdamW::step(std::vector<at::Tensor>& masters, const std::vector<at::Tensor>& grads, double lr) {
  ++steps_;
  const double correction1 = 1.0 - std::pow(options_.beta1, static_cast<double>(steps_));
  const double correction2 = 1.0 - std::pow(options_.beta2, static_cast<double>(steps_));
  for (size_t u = 0; u < masters.size(); ++u) {
    at::Tensor& p = masters[u];
    if (options_.weight_decay != 0.0) p.mul_(1.0 - lr * options_.weight_decay * decay_mask_[u]);
    m_[u].mul_(options_.beta1).add_(grads[u], 1.0 - options_.beta1);
    v_[u].mul_(options_.beta2).addcmul_(grads[u], grads[u], 1.0 - options_.beta2);
    const at::Tensor denominator = (v_[u].sqrt() / std::sqrt(correction2)).add_(options_.eps);
    p.addcdiv_(m_[u], denominator, -lr / correction1);
  }
}

double clip_grad_norm(std::vector<at::Tensor>& grads, double max_norm, Communicator& group) {
  at::Tensor squares = at::zeros({1}, at::kDouble);
  for (const auto& grad : grads) squares += grad.to(at::kDouble).pow(2).sum();
  group.all_reduce(squares, ReduceOp::sum);
  const double norm = std::sqrt(squares.item<double>());
  if (max_norm > 0.0) {
    const double scale = max_norm / (norm + 1e-6);
    if (scale < 1.0) {
      for (auto& grad : grads) grad.mul_(scale);
    }
  }
  return norm;
}

}  // namespace st

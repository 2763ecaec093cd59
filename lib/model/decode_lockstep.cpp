#include "model/decode_lockstep.h"

#include <ATen/ATen.h>

#include "model/decode_batch.h"

namespace st {

DecodeLockstep::DecodeLockstep(const LlamaWeights& weights, const ModelConfig& config)
    : weights_(weights), config_(config) {
  for (const LayerWeights& layer : weights.layers) {
    if (layer.expert_exchange) exchange_ = layer.expert_exchange;
  }
}

bool DecodeLockstep::any_rank(bool mine) {
  const int ranks = exchange_->size();
  const at::Tensor said = at::full({ranks}, mine ? 1 : 0, weights_.embed.options().dtype(at::kLong));
  const at::Tensor heard = at::empty_like(said);
  const std::vector<int64_t> one_each(static_cast<size_t>(ranks), 1);
  exchange_->all_to_all(heard, said, one_each, one_each);
  return heard.sum().item<int64_t>() > 0;
}

void DecodeLockstep::before_forward() {
  if (exchange_) any_rank(true);
}

void DecodeLockstep::finish() {
  if (!exchange_) return;
  const DecodeBatch idle(weights_, config_, 1, 1);
  const std::vector<std::vector<int64_t>> one_token = {{0}};
  while (any_rank(false)) {
    idle.prefill(one_token, 0, 1);
    ++idle_forwards_;
  }
}

}  // namespace st

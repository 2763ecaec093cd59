#include "model/moe_block.h"

#include <ATen/ATen.h>

#include "model/llama_blocks.h"
#include "model/swiglu.h"

namespace st {
namespace {

constexpr auto kGateUp = static_cast<size_t>(LoraTarget::gate);
constexpr auto kDown = static_cast<size_t>(LoraTarget::down);

// Expert `expert`'s adapter output on its tokens x, from the layer's stacked pair of `target`.
at::Tensor expert_delta(const at::Tensor& x, const LayerWeights& w, LoraTarget target, int64_t expert) {
  const LoraPair& stacked = w.lora[static_cast<size_t>(target)];
  AdaptedWeight piece;
  piece.expert = expert;
  const auto experts = static_cast<int64_t>(w.experts.gate.size());
  const auto stream = w.layer * static_cast<int64_t>(kLoraTargetCount) + static_cast<int64_t>(target);
  return lora_delta(x, adapted_pair(stacked, piece, experts), w.adapter, stream);
}

}  // namespace

Routing route(const at::Tensor& tokens, const at::Tensor& router, const ExpertShape& shape, ActivationCache* cache) {
  const at::Tensor logits = linear_op(tokens, router, {}, cache);
  Routing routing;
  routing.probs = at::softmax(logits, -1, at::kFloat);
  auto [top, experts] = at::topk(routing.probs, shape.experts_per_token, -1);
  if (shape.renormalize) top = top / top.sum(-1, /*keepdim=*/true);
  routing.experts = experts;
  routing.weights = top.to(logits.scalar_type());
  return routing;
}

at::Tensor expert_outputs(const LayerWeights& w, const at::Tensor& tokens, const Routing& routing,
                          ActivationCache* cache) {
  const int64_t k = routing.experts.size(1);
  const at::Tensor picks = routing.experts.reshape(-1);  // [N * k], token-major
  // Stable: within an expert, its tokens stay in token order.
  const at::Tensor order = std::get<1>(at::sort(picks, /*stable=*/true, /*dim=*/0, /*descending=*/false));
  const at::Tensor token_of = at::floor_divide(order, k);
  const at::Tensor weight_of = routing.weights.reshape(-1).index_select(0, order).unsqueeze(1);
  const at::Tensor counts = at::bincount(picks, {}, static_cast<int64_t>(w.experts.gate.size())).cpu();
  const int64_t* count = counts.data_ptr<int64_t>();
  at::Tensor out = at::zeros_like(tokens);
  int64_t offset = 0;
  for (size_t expert = 0; expert < w.experts.gate.size(); ++expert) {
    const int64_t n = count[expert];
    if (n == 0) continue;
    const at::Tensor rows = token_of.narrow(0, offset, n);
    const at::Tensor x = tokens.index_select(0, rows);
    at::Tensor gate = linear_op(x, w.experts.gate[expert], {}, cache);
    at::Tensor up = linear_op(x, w.experts.up[expert], {}, cache);
    if (w.lora[kGateUp].a.defined()) {  // one delta for both: gate_up's pair (lora.h adapted_pair)
      const at::Tensor delta = expert_delta(x, w, LoraTarget::gate, static_cast<int64_t>(expert));
      gate = gate + delta.narrow(1, 0, gate.size(1));
      up = up + delta.narrow(1, gate.size(1), up.size(1));
    }
    const at::Tensor hidden = swiglu(gate, up);
    at::Tensor down = linear_op(hidden, w.experts.down[expert], {}, cache);
    if (w.lora[kDown].a.defined()) down = down + expert_delta(hidden, w, LoraTarget::down, static_cast<int64_t>(expert));
    out = out.index_add(0, rows, down * weight_of.narrow(0, offset, n));
    offset += n;
  }
  return out;
}

at::Tensor moe_block(const LayerWeights& w, const at::Tensor& x, const ModelConfig& config, ActivationCache* cache,
                     Routing* routing) {
  const at::Tensor tokens = x.reshape({-1, x.size(-1)});
  Routing routed = route(tokens, w[LayerParam::router], config.experts, cache);
  const at::Tensor out = expert_outputs(w, tokens, routed, cache).view(x.sizes());
  if (routing) *routing = std::move(routed);
  return out;
}

}  // namespace st

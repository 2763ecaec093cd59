#include "model/moe_block.h"

#include <ATen/ATen.h>

#include <vector>

#include "model/llama_blocks.h"
#include "model/swiglu.h"
#include "util/torch_compat.h"

namespace st {
namespace {

// The routed experts' stacked LoRA pairs (PEFT's gate_up under target gate, and down), null where
// unadapted - or where the layer's MLP pairs are a shared expert's (expert_outputs).
struct ExpertPairs {
  const LoraPair* gate_up = nullptr;
  const LoraPair* down = nullptr;
  bool any() const { return gate_up != nullptr || down != nullptr; }
};

ExpertPairs expert_pairs(const LayerWeights& w, bool adapted) {
  const auto bound = [&](LoraTarget target) -> const LoraPair* {
    const LoraPair& pair = w.lora[static_cast<size_t>(target)];
    return adapted && pair.a.defined() ? &pair : nullptr;
  };
  return {bound(LoraTarget::gate), bound(LoraTarget::down)};
}

// Expert `expert`'s adapter output on its tokens x, from the layer's stacked pair of `target`.
at::Tensor expert_delta(const at::Tensor& x, const LayerWeights& w, const LoraPair& stacked, LoraTarget target,
                        int64_t expert, int64_t experts) {
  AdaptedWeight piece;
  piece.expert = expert;
  return lora_delta(x, adapted_pair(stacked, piece, experts), w.adapter, lora_stream(w.layer, target));
}

// The rows received from each rank, [P, local] counts of them per expert in rank-then-expert
// order -> the permutation that lists them expert by expert (within an expert, by rank).
at::Tensor by_expert(const at::Tensor& arriving) {
  const int64_t ranks = arriving.size(0), local = arriving.size(1);
  const int64_t* count = arriving.data_ptr<int64_t>();
  std::vector<int64_t> start(static_cast<size_t>(ranks * local));
  int64_t offset = 0;
  for (int64_t i = 0; i < ranks * local; ++i) {
    start[static_cast<size_t>(i)] = offset;
    offset += count[i];
  }
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(offset));
  for (int64_t j = 0; j < local; ++j) {
    for (int64_t i = 0; i < ranks; ++i) {
      const int64_t first = start[static_cast<size_t>(i * local + j)];
      for (int64_t row = 0; row < count[i * local + j]; ++row) order.push_back(first + row);
    }
  }
  return at::tensor(order, at::kLong);
}

// The GPU's path: no adapters, bf16 rows on a libtorch with the grouped GEMM.
bool runs_grouped(const ExpertPairs& pairs, const at::Tensor& rows, ExpertKernel kernel) {
  return kernel == ExpertKernel::automatic && compat::kHasGroupedMm && rows.is_cuda() &&
         rows.scalar_type() == at::kBFloat16 && !pairs.any();
}

// local_outputs' math with one grouped GEMM per projection over every expert's run of rows.
at::Tensor grouped_outputs(const LayerWeights& w, const at::Tensor& rows, const at::Tensor& counts, int64_t first) {
  std::vector<at::Tensor> gates, ups, downs;
  for (int64_t j = 0; j < counts.numel(); ++j) {
    const auto e = static_cast<size_t>(first + j);
    gates.push_back(w.experts.gate[e]);
    ups.push_back(w.experts.up[e]);
    downs.push_back(w.experts.down[e]);
  }
  const at::Tensor ends = counts.cumsum(0).to(at::kInt).to(rows.device(), /*non_blocking=*/true);
  const at::Tensor hidden = swiglu(compat::grouped_linear(rows, at::stack(gates), ends),
                                   compat::grouped_linear(rows, at::stack(ups), ends));
  return compat::grouped_linear(hidden, at::stack(downs), ends);
}

// Rows [M, D] sorted by expert, counts[j] (host) of them for expert first + j of `experts` ->
// each row's expert output.
at::Tensor local_outputs(const LayerWeights& w, const ExpertPairs& pairs, const at::Tensor& rows,
                         const at::Tensor& counts, int64_t first, int64_t experts, ActivationCache* cache,
                         ExpertKernel kernel) {
  // No rows: an empty view of them, so that under expert parallelism the all-to-alls stay on the
  // backward's path and run on this rank too (every rank must take part in each).
  if (rows.size(0) == 0) return rows.narrow(0, 0, 0);
  if (runs_grouped(pairs, rows, kernel)) return grouped_outputs(w, rows, counts, first);
  const int64_t* count = counts.data_ptr<int64_t>();
  std::vector<at::Tensor> outputs;
  int64_t offset = 0;
  for (int64_t j = 0; j < counts.numel(); ++j) {
    const int64_t n = count[j], expert = first + j;
    if (n == 0) continue;
    const at::Tensor x = rows.narrow(0, offset, n);
    const auto e = static_cast<size_t>(expert);
    at::Tensor gate = linear_op(x, w.experts.gate[e], {}, cache);
    at::Tensor up = linear_op(x, w.experts.up[e], {}, cache);
    if (pairs.gate_up) {  // one delta for both: gate_up's pair (lora.h adapted_pair)
      const at::Tensor delta = expert_delta(x, w, *pairs.gate_up, LoraTarget::gate, expert, experts);
      gate = gate + delta.narrow(1, 0, gate.size(1));
      up = up + delta.narrow(1, gate.size(1), up.size(1));
    }
    const at::Tensor hidden = swiglu(gate, up);
    at::Tensor down = linear_op(hidden, w.experts.down[e], {}, cache);
    if (pairs.down) down = down + expert_delta(hidden, w, *pairs.down, LoraTarget::down, expert, experts);
    outputs.push_back(down);
    offset += n;
  }
  return outputs.size() == 1 ? outputs.front() : at::cat(outputs);
}

// Expert parallelism: rows sorted by expert go to the experts' ranks (counts first, then rows),
// this rank's experts run on what arrives, and the outputs go back the way the rows came.
at::Tensor exchanged_outputs(const LayerWeights& w, const ExpertPairs& pairs, const at::Tensor& sent,
                             const at::Tensor& counts, ActivationCache* cache, ExpertKernel kernel) {
  ExpertExchange& exchange = *w.expert_exchange;
  const int ranks = exchange.size();
  const int64_t local = counts.numel() / ranks;
  const at::Tensor arriving = exchange_expert_counts(exchange, counts);  // [P, local]: rank i's for each expert
  const at::Tensor sending = counts.cpu().reshape({ranks, local}).sum(1);
  std::vector<int64_t> send(static_cast<size_t>(ranks)), receive(static_cast<size_t>(ranks));
  for (int i = 0; i < ranks; ++i) {
    send[static_cast<size_t>(i)] = sending[i].item<int64_t>();
    receive[static_cast<size_t>(i)] = arriving[i].sum().item<int64_t>();
  }
  const at::Tensor received = exchange_rows(w.expert_exchange, sent, send, receive);  // by rank, then expert
  // Regrouped by expert (each expert's rows in rank order): one run of rows per expert.
  const at::Tensor order = by_expert(arriving);
  const at::Tensor outputs = local_outputs(w, pairs, received.index_select(0, order.to(received.device())),
                                           arriving.sum(0).contiguous(), exchange.rank() * local, counts.numel(), cache,
                                           kernel);
  const at::Tensor returned = at::zeros_like(outputs).index_copy(0, order.to(outputs.device()), outputs);
  return exchange_rows(w.expert_exchange, returned, receive, send);
}

// The shared expert every token runs beside its routed ones (Experts::qwen_shared), its output
// scaled by sigmoid(shared_expert_gate x) as transformers' Qwen3_5MoeSparseMoeBlock scales it; on
// such a model the MLP's targets and shared_expert_gate adapt these projections
// (hf/param_table.h adapted_layer_param).
at::Tensor shared_expert(const LayerWeights& w, const at::Tensor& tokens, ActivationCache* cache) {
  const at::Tensor gate = adapted_linear(tokens, w[LayerParam::shared_gate], {}, w, LoraTarget::gate, cache);
  const at::Tensor up = adapted_linear(tokens, w[LayerParam::shared_up], {}, w, LoraTarget::up, cache);
  const at::Tensor out = adapted_linear(swiglu(gate, up), w[LayerParam::shared_down], {}, w, LoraTarget::down, cache);
  return at::sigmoid(adapted_linear(tokens, w[LayerParam::shared_expert_gate], {}, w, LoraTarget::shared_expert_gate,
                                    cache)) *
         out;
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
                          ActivationCache* cache, ExpertKernel kernel, bool pairs_are_experts) {
  const ExpertPairs pairs = expert_pairs(w, pairs_are_experts);
  const int64_t k = routing.experts.size(1);
  const int64_t experts = routing.probs.size(1);
  const at::Tensor picks = routing.experts.reshape(-1);  // [N * k], token-major
  // Stable: within an expert, its tokens stay in token order.
  const at::Tensor order = std::get<1>(at::sort(picks, /*stable=*/true, /*dim=*/0, /*descending=*/false));
  const at::Tensor token_of = at::floor_divide(order, k);
  const at::Tensor weight_of = routing.weights.reshape(-1).index_select(0, order).unsqueeze(1);
  const at::Tensor counts = at::bincount(picks, {}, experts);
  const at::Tensor sent = tokens.index_select(0, token_of);  // by expert, so by the rank that holds it
  const at::Tensor outputs = w.expert_exchange ? exchanged_outputs(w, pairs, sent, counts, cache, kernel)
                                               : local_outputs(w, pairs, sent, counts.cpu(), 0, experts, cache, kernel);
  // Each token's outputs summed in expert order, as transformers sums them.
  return at::zeros_like(tokens).index_add(0, token_of, outputs * weight_of);
}

at::Tensor moe_block(const LayerWeights& w, const at::Tensor& x, const ModelConfig& config, ActivationCache* cache,
                     Routing* routing) {
  const at::Tensor tokens = x.reshape({-1, x.size(-1)});
  const bool shared = config.experts.shared_intermediate_size > 0;
  const at::Tensor shared_out = shared ? shared_expert(w, tokens, cache) : at::Tensor();
  Routing routed = route(tokens, w[LayerParam::router], config.experts, cache);
  at::Tensor out =
      expert_outputs(w, tokens, routed, cache, ExpertKernel::automatic, lora_adapts_routed_experts(config));
  if (shared) out = out + shared_out;  // transformers' order: the routed experts' sum, then the shared one
  out = out.view(x.sizes());
  if (routing) *routing = std::move(routed);
  return out;
}

}  // namespace st

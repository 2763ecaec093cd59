#include "fsdp/recompute.h"

#include "fsdp/unit_layout.h"
#include "util/errors.h"

namespace st {

int64_t layer_kept_bytes(const ModelConfig& config, Recompute policy, int64_t tokens, int64_t compute_bytes,
                         int64_t gathered_layer_bytes) {
  const int64_t hidden = config.hidden_size, intermediate = config.intermediate_size;
  // The matmul outputs: q, k, v, o, gate, up, down.
  const int64_t matmuls = config.q_size() + 2 * config.kv_size() + 2 * hidden + 2 * intermediate;
  switch (policy) {
    case Recompute::full:
    case Recompute::automatic: return 0;
    case Recompute::selective: return tokens * matmuls * compute_bytes;
    case Recompute::none:
      // Also the norms' fp32 inputs and outputs (twice as many norms where they sandwich each
      // branch), rotary q/k, attention output, silu(gate) and the product; the fused attention
      // keeps O(tokens) statistics.
      return tokens * (matmuls + 4 * hidden + config.q_size() + config.kv_size() + 2 * intermediate) * compute_bytes +
             tokens * hidden * (family_of(config.model_type).layer_norms == LayerNorms::sandwich ? 16 : 8) +
             tokens * config.num_attention_heads * 4 + gathered_layer_bytes;
  }
  return 0;
}

int64_t kept_gathered_layer_bytes(const ModelConfig& config, int shard_group_size, Sharding sharding,
                                  int64_t compute_bytes) {
  if (shard_group_size <= 1 || sharding == Sharding::grad_op || config.num_hidden_layers == 0) return 0;
  const auto units = build_unit_layouts(config, shard_group_size);
  int64_t elements = 0;
  for (size_t used : units_run_with(config, 1)) elements += units[used].padded_numel;  // a sparse layer's experts too
  return elements * compute_bytes;
}

std::vector<Recompute> plan_recompute(const ModelConfig& config, const RecomputePlanInputs& in) {
  const size_t layers = static_cast<size_t>(config.num_hidden_layers);
  std::vector<Recompute> plan(layers + 2, Recompute::none);  // embedding and head: see recompute.h
  if (in.policy != Recompute::automatic) {
    for (size_t layer = 1; layer <= layers; ++layer) plan[layer] = in.policy;
    return plan;
  }
  int64_t left = in.budget_bytes;
  for (size_t layer = 1; layer <= layers; ++layer) {
    plan[layer] = Recompute::full;
    for (Recompute choice : {Recompute::none, Recompute::selective}) {
      const int64_t cost = layer_kept_bytes(config, choice, in.tokens, in.compute_bytes, in.gathered_layer_bytes);
      if (left < 0 || cost <= left) {
        plan[layer] = choice;
        if (left >= 0) left -= cost;
        break;
      }
    }
  }
  return plan;
}

std::string describe_recompute_plan(const std::vector<Recompute>& plan) {
  std::string text;
  size_t run = 0;
  for (size_t layer = 1; layer + 1 <= plan.size() - 1; ++layer) {
    ++run;
    const bool last = layer + 1 == plan.size() - 1 || plan[layer + 1] != plan[layer];
    if (!last) continue;
    text += (text.empty() ? "" : ", ") + std::string(enum_name(plan[layer])) + " x " + std::to_string(run);
    run = 0;
  }
  return text.empty() ? "no layers" : text;
}

}  // namespace st

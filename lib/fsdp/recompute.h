// Activation recomputation (train.recompute), per decoder-layer unit:
//   full       keep only the unit's input; backward reruns the whole unit with grad
//   selective  also keep the matmul outputs; backward reruns norms, rotary, attention core
//              and activations, and replays the matmuls (activation_cache.h)
//   none       keep the unit's autograd graph (and, under full sharding, its gathered
//              parameters) from forward to backward: no recompute
//   auto       per unit, the most kept activations that fit train.memory_budget_gib
// The embedding needs no recompute (its gradient is an index_add) and the head, the last unit
// of the forward and the first of the backward, always keeps its graph.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fsdp/fsdp_options.h"
#include "fsdp/sharding.h"
#include "hf/model_config.h"

namespace st {

// Bytes a decoder layer keeps from forward to backward beyond its input, for `tokens` tokens
// of one micro-batch, under `policy` (full 0; none includes the gathered parameters when they
// would otherwise be freed).
int64_t layer_kept_bytes(const ModelConfig& config, Recompute policy, int64_t tokens, int64_t compute_bytes,
                         int64_t gathered_layer_bytes);

// The gathered parameters a kept layer holds that would otherwise be freed after its forward:
// a layer's padded size x compute_bytes when full or hybrid sharding splits it over several
// ranks; 0 where they stay anyway (one rank, grad_op, none).
int64_t kept_gathered_layer_bytes(const ModelConfig& config, int shard_group_size, Sharding sharding,
                                  int64_t compute_bytes);
// Left free by auto beyond its estimates: allocator fragmentation, NCCL and cuBLAS workspaces.
constexpr int64_t kRecomputeMarginBytes = int64_t{2} << 30;

struct RecomputePlanInputs {
  Recompute policy = Recompute::full;
  int64_t tokens = 0;               // padded tokens of the largest micro-batch
  int64_t compute_bytes = 2;
  int64_t gathered_layer_bytes = 0; // a layer's gathered parameters freed after forward (0 if kept anyway)
  int64_t budget_bytes = -1;        // for auto: bytes left for kept activations; < 0 = unlimited
};

// One policy per unit (embedding, layers, head); auto resolved: layers from the first on get
// none while it fits, then selective while it fits, the rest full (the first layers' kept
// graphs live longest, so any order fits the same count).
std::vector<Recompute> plan_recompute(const ModelConfig& config, const RecomputePlanInputs& inputs);
// "none x 16" / "none x 10, selective x 4, full x 2" over the layers.
std::string describe_recompute_plan(const std::vector<Recompute>& plan);

}  // namespace st

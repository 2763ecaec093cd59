#include "fsdp/memory_estimate.h"

#include <algorithm>

#include "fsdp/quantized_base.h"
#include "fsdp/shard_source.h"
#include "fsdp/unit_layout.h"
#include "model/context_split.h"
#include "model/gated_delta_layer.h"
#include "model/llama_units.h"
#include "util/dynamic_quant.h"
#include "util/errors.h"

namespace st {
namespace {

int64_t shard_group_size(const EstimateInputs& in) {
  switch (in.sharding) {
    case Sharding::full:
    case Sharding::grad_op: return in.nodes * in.ranks_per_node;
    case Sharding::none: return 1;
    case Sharding::hybrid: return in.ranks_per_node;
  }
  return 1;
}

// Compute-dtype shards cast from device masters at each gather (FsdpModel::casts_per_gather).
bool casts_per_gather(const EstimateInputs& in) {
  return in.compute_copy == ComputeCopy::per_gather && in.compute_bytes != 4 && !(in.offload && in.on_gpu);
}

// The share of unit `unit` a rank gathers, as its divisor: 1, but under expert parallelism an
// experts unit's run of this rank's experts, 1 / P of it (FsdpModel::gathered_numel).
int64_t gathered_divisor(const ModelConfig& config, const EstimateInputs& in, size_t unit) {
  return unit_role(config, unit) == UnitRole::experts ? std::max<int64_t>(1, in.expert_parallel) : 1;
}

int64_t gathered_elements(const ModelConfig& config, const EstimateInputs& in, const std::vector<UnitLayout>& units,
                          size_t unit) {
  return units[unit].padded_numel / gathered_divisor(config, in, unit);
}

// Peak of gathered parameters (compute dtype) plus `gradient_bytes` (unit_gradient_bytes).
int64_t gathered_bytes(const std::vector<UnitLayout>& units, const ModelConfig& config, const EstimateInputs& in,
                       int64_t group, int64_t gradient_bytes) {
  std::vector<int64_t> needed;  // elements a unit's run needs gathered
  for (size_t u = 0; u < units.size(); ++u) {
    int64_t elements = 0;
    for (size_t used : units_run_with(config, u)) elements += gathered_elements(config, in, units, used);
    needed.push_back(elements);
  }
  int64_t parameters = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    if (in.sharding == Sharding::grad_op) {
      parameters += gathered_elements(config, in, units, u);  // every unit stays gathered until its backward
    } else {
      parameters = std::max(parameters, needed[u] + (u + 1 < run_unit_count(config) ? needed[u + 1] : 0));
    }
  }
  // Whole units are local: nothing is gathered, unless each is cast from its master per use.
  if (group == 1 && !casts_per_gather(in)) parameters = 0;
  return parameters * in.compute_bytes + gradient_bytes;
}

// The same for a QLoRA base: a running unit's dequantized flat (an embedding or head is its
// gathered bytes as they are, nothing on one rank) beside the next unit's gathered bytes, which
// are dequantized only when it runs; plus the dequantization's scratch.
int64_t quantized_gathered_bytes(const std::vector<QuantizedUnitLayout>& units, const ModelConfig& config,
                                 const EstimateInputs& in, int64_t group, int64_t gradient_bytes) {
  std::vector<int64_t> running, arriving;  // bytes per unit
  for (size_t u = 0; u < units.size(); ++u) {
    const QuantizedUnitLayout& unit = units[u];
    const bool dequantized = unit.shard_blocks() > 0;
    const int64_t part = gathered_divisor(config, in, u);  // an experts unit holds no NF4 block
    running.push_back(dequantized || group > 1 ? unit.bound.padded_numel * in.compute_bytes / part : 0);
    arriving.push_back(group > 1 ? unit.shard_bytes * group / part : 0);
  }
  const auto sum_over = [&](const std::vector<int64_t>& bytes, size_t u) {
    int64_t total = 0;
    for (size_t used : units_run_with(config, u)) total += bytes[used];
    return total;
  };
  int64_t parameters = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    if (in.sharding == Sharding::grad_op) {
      parameters += running[u];
    } else {
      parameters = std::max(parameters,
                            sum_over(running, u) + (u + 1 < run_unit_count(config) ? sum_over(arriving, u + 1) : 0));
    }
  }
  return parameters + gradient_bytes + dequantize_workspace_bytes();
}

// The unit gradients alive in backward at their peak. Where ranks reduce: a unit's fp32 buffer
// (`elements[u]`: the padded elements its backward writes, the tied head's embedding share
// included), beside either one parameter's gradient in the compute dtype on its way in
// (`routed[u]`: the largest that autograd makes, gradient_route.h; the model writes the
// embedding's and the lm_head's itself) or the buffer's copy in the reduce dtype, while the
// unit before it in backward (u + 1) is still being reduced. A lone rank writes its shards
// directly: only the parameter on its way in.
int64_t unit_gradient_bytes(const std::vector<int64_t>& elements, const std::vector<int64_t>& routed,
                            const EstimateInputs& in, bool reduces) {
  int64_t peak = 0;
  for (size_t u = 0; u < elements.size(); ++u) {
    const int64_t arriving = routed[u] * in.compute_bytes;
    if (!reduces) {
      peak = std::max(peak, arriving);
      continue;
    }
    const int64_t cast = in.reduce_bytes != 4 ? elements[u] * in.reduce_bytes : 0;
    const int64_t in_flight = u + 1 < elements.size() ? elements[u + 1] * in.reduce_bytes : 0;
    peak = std::max(peak, elements[u] * 4 + std::max(arriving, cast) + in_flight);
  }
  return peak;
}

// The largest parameter of a trained unit whose gradient autograd makes (not the embedding's
// or the lm_head's, which the model writes into their targets itself).
int64_t largest_routed_parameter(const ModelConfig& config, const UnitLayout& unit) {
  int64_t largest = 0;
  for (const ParamSlot& slot : unit.params) {
    if (slot.spec.key.is(ModelParam::embed) || slot.spec.key.is(lm_head_param(config))) continue;
    largest = std::max(largest, slot.spec.numel());
  }
  return largest;
}

// A row's length as a context group pads it (itself without one).
int64_t padded_row(const EstimateInputs& in) {
  return in.context_parallel > 1 ? context_row_length(in.seq_len, in.context_parallel) : in.seq_len;
}

// The micro-batch's tokens on one rank: a context group splits each row.
int64_t local_tokens(const EstimateInputs& in) {
  return in.micro_batch_rows * padded_row(in) / std::max<int64_t>(1, in.context_parallel);
}

// A layer's MLP activations per token, in elements of the compute dtype: a dense MLP's gate, up,
// activation and product; a sparse layer's k copies of the token sorted by expert, their experts'
// gate, up, activation and product, the k weighted outputs, and the router's fp32 logits and
// probabilities over all experts (counted as 2 elements each); under expert parallelism also the
// k rows received from other ranks and the k outputs sent back (as many as sent, when balanced); a
// shared expert's gate, up, activation and product, its output and its gate's logit and sigmoid.
int64_t mlp_elements_per_token(const ModelConfig& config, int64_t expert_parallel) {
  const int64_t dense = 4 * config.intermediate_size;
  if (config.experts.num_experts == 0) return dense;
  const ExpertShape& e = config.experts;
  const int64_t shared = e.shared_intermediate_size > 0 ? 4 * e.shared_intermediate_size + config.hidden_size + 2 : 0;
  const int64_t sparse =
      e.experts_per_token * ((expert_parallel > 1 ? 4 : 2) * config.hidden_size + 4 * e.expert_intermediate_size) +
      2 * 2 * e.num_experts + shared;
  // The largest layer's: a model with dense layers among the sparse ones has both kinds.
  return config.sparse_layer_count() < config.num_hidden_layers ? std::max(dense, sparse) : sparse;
}

int64_t activation_bytes(const ModelConfig& config, const EstimateInputs& in) {
  const int64_t tokens = local_tokens(in);
  const int64_t hidden = config.hidden_size, c = in.compute_bytes;
  const int64_t saved_inputs = (config.num_hidden_layers + 2) * tokens * hidden * c;
  // One decoder layer recomputed with grad: norms, q/k/v/o, residuals, its MLP's activations and
  // their gradients (x2); attention by a fused kernel keeps O(tokens) statistics only. Sandwich
  // norms add two norms on the branches' outputs, each keeping its fp32 input and output.
  const bool sandwich = family_of(config.model_type).layer_norms == LayerNorms::sandwich;
  // A hybrid's largest token mixer: attention's q (and its output gate), k, v, or a Gated DeltaNet
  // layer's (model/gated_delta_layer.h).
  const int64_t attention = config.q_size() * (config.attention_output_gate ? 2 : 1) + 2 * config.kv_size();
  const int64_t mixer = config.hybrid() ? std::max(attention, gated_delta_activation_elements(config)) : attention;
  const int64_t per_token =
      6 * hidden + (sandwich ? 4 * hidden : 0) + mixer + mlp_elements_per_token(config, in.expert_parallel);
  int64_t recompute = 2 * tokens * per_token * c + tokens * config.num_attention_heads * 4;
  if (in.context_parallel > 1) {
    // The group's keys and values of the whole rows, gathered per layer: the gathered tensor,
    // the key lists read from it (up to 1.25x the rows for C = 2) and their gradients.
    const int64_t whole = in.micro_batch_rows * padded_row(in) * 2 * config.kv_size() * c;
    recompute += 3 * whole;
  }
  // The head: normed input and its grad, and one chunk's fp32 logits, softmax and grad.
  const int64_t chunk = std::min(tokens, in.logp_chunk_tokens);
  const int64_t head = 2 * tokens * hidden * c + 3 * chunk * config.vocab_size * 4;
  // The bool mask, and the additive copy of it a masked attention kernel makes.
  const int64_t mask = in.masked_attention ? tokens * in.seq_len * (1 + c) : 0;
  return saved_inputs + mask + std::max(recompute, head);
}

}  // namespace

MemoryEstimate estimate_memory(const ModelConfig& config, const EstimateInputs& in) {
  if (in.nodes < 1 || in.ranks_per_node < 1) throw ConfigError("estimate: nodes and ranks per node must be >= 1");
  MemoryEstimate e;
  e.shard_group = shard_group_size(in);
  const auto units = build_unit_layouts(config, static_cast<int>(e.shard_group));
  // The trained units: the model's own, or an adapter run's adapters beside the frozen base.
  const int64_t multiple = shard_multiple_of(in.optimizer);
  const auto trained = in.adapters.present() ? build_adapter_unit_layouts(config, in.adapters.targets, in.adapters.r,
                                                                          static_cast<int>(e.shard_group), multiple)
                                             : build_unit_layouts(config, static_cast<int>(e.shard_group), multiple);
  int64_t n = 0;
  std::vector<int64_t> gradient_elements, routed_elements;  // per trained unit: unit_gradient_bytes
  for (const UnitLayout& unit : trained) n += unit.shard_numel;
  for (size_t u = 0; u < run_unit_count(config); ++u) {  // a sparse layer's backward writes its experts' too
    int64_t run_with = 0, routed = 0;
    for (size_t used : units_run_with(config, u)) {
      run_with += gathered_elements(config, in, trained, used);
      routed = std::max(routed, largest_routed_parameter(config, trained[used]));
    }
    gradient_elements.push_back(run_with);
    routed_elements.push_back(routed);
  }
  int64_t base_elements = 0;
  std::vector<QuantizedUnitLayout> quantized;
  for (const auto& unit : units) {
    base_elements += unit.shard_numel;
    if (!in.adapters.quantized) {
      e.frozen_bytes += unit.shard_numel * in.compute_bytes;
      continue;
    }
    quantized.push_back(build_quantized_unit_layout(unit, static_cast<int>(e.shard_group), in.adapters.double_quant,
                                                    in.compute_bytes == 4 ? at::kFloat : at::kBFloat16));
    e.frozen_bytes += quantized.back().shard_bytes;
  }
  if (!in.adapters.present()) e.frozen_bytes = 0;
  if (in.adapters.present() && frozen_embedding_on_host(config, in.adapters.host_embedding, in.on_gpu,
                                                        static_cast<int>(e.shard_group))) {
    e.frozen_host_bytes =
        in.adapters.quantized ? quantized.front().shard_bytes : units.front().shard_numel * in.compute_bytes;
  }
  e.shard_elements = n + (in.adapters.present() ? base_elements : 0);
  // The compute copy is its own tensor unless it is the fp32 master on the same device.
  const bool separate_compute_copy = (in.compute_bytes != 4 || (in.offload && in.on_gpu)) && !casts_per_gather(in);
  e.params = e.frozen_bytes + 4 * n + (separate_compute_copy ? in.compute_bytes * n : 0);
  // Gradient shards in the reduce dtype where ranks reduce (a lone rank writes fp32), all of
  // them, or with the step inside backward only the unit handed over, the one being reduced and
  // (tied head) the embedding's share.
  const bool reduces = e.shard_group > 1 || (in.sharding != Sharding::full && in.sharding != Sharding::grad_op &&
                                             in.nodes * in.ranks_per_node > 1);
  const int64_t grad_bytes = reduces ? in.reduce_bytes : 4;
  int64_t largest_shard = 0;
  for (const UnitLayout& unit : trained) largest_shard = std::max(largest_shard, unit.shard_numel);
  const int64_t live_shards = 2 * largest_shard + (config.head_reads_embedding() ? trained.front().shard_numel : 0);
  e.grads = grad_bytes * (in.step_in_backward ? std::min(n, live_shards) : n);
  // adamw8bit: a code per moment and element, an fp32 absmax per moment and block of 256.
  e.optimizer = in.optimizer == OptimizerName::adamw8bit ? 2 * n + 8 * (n / kDynamicBlockSize) : 8 * n;
  if (!in.on_gpu) {
    e.host_states = e.params + e.grads + e.optimizer;
  } else if (in.offload) {
    e.host_states = 4 * n + e.optimizer;
    e.device_states = e.params - 4 * n + e.grads;
  } else {
    e.device_states = e.params + e.grads + e.optimizer;
  }
  e.device_states -= e.frozen_host_bytes;
  e.host_states += e.frozen_host_bytes;
  const int64_t gradient_bytes = unit_gradient_bytes(gradient_elements, routed_elements, in, reduces);
  e.gathered = in.adapters.quantized ? quantized_gathered_bytes(quantized, config, in, e.shard_group, gradient_bytes)
                                     : gathered_bytes(units, config, in, e.shard_group, gradient_bytes);
  e.activations = activation_bytes(config, in);
  RecomputePlanInputs plan;
  plan.policy = in.recompute;
  plan.tokens = local_tokens(in);
  plan.compute_bytes = in.compute_bytes;
  plan.gathered_layer_bytes =
      kept_gathered_layer_bytes(config, static_cast<int>(e.shard_group), in.sharding, in.compute_bytes);
  plan.budget_bytes = in.on_gpu && in.device_bytes > 0
                          ? std::max<int64_t>(0, in.device_bytes - e.device_states - e.gathered - e.activations -
                                                     kRecomputeMarginBytes)
                          : -1;
  e.recompute_plan = plan_recompute(config, plan);
  for (size_t u = 1; u + 1 < e.recompute_plan.size(); ++u) {
    e.kept_activations += layer_kept_bytes(config, e.recompute_plan[u], plan.tokens, in.compute_bytes,
                                           plan.gathered_layer_bytes);
  }
  e.activations += e.kept_activations;
  const int64_t working = e.gathered + e.activations;
  e.per_device = in.on_gpu ? e.device_states + working : 0;
  e.per_host = (e.host_states + (in.on_gpu ? 0 : working)) * in.ranks_per_node;
  return e;
}

SamplingMemory estimate_sampling_memory(const ModelConfig& config, int64_t rows, int64_t tokens,
                                        const EstimateInputs& in) {
  const int64_t compute_bytes = in.compute_bytes;
  SamplingMemory out;
  int64_t parameters = config.parameter_count();
  const LinearAttentionShape& linear = config.linear_attention;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    int64_t experts = 0;  // the routed experts' (a dense layer has none): other ranks hold (P - 1) / P
    for (const ParamSpec& spec : expert_params(config, layer)) experts += spec.numel();
    parameters -= experts - experts / std::max<int64_t>(1, in.expert_parallel);
    out.caches += config.gated_delta_layer(layer)
                      ? rows * (linear.value_heads * linear.key_head_dim * linear.value_head_dim +
                                linear.conv_channels() * linear.conv_kernel) * compute_bytes
                      : 2 * rows * tokens * config.kv_size() * compute_bytes;  // keys and values
  }
  out.weights = parameters * compute_bytes;
  out.logits = 2 * rows * config.vocab_size * static_cast<int64_t>(sizeof(float));
  return out;
}

}  // namespace st

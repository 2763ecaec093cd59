#include "memory_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "train/recompute_choice.h"
#include "train/train_plan.h"

namespace st {
namespace {

std::string gib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%9.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

}  // namespace

std::string resolve_token_budget(const ModelConfig& config, const EstimateInputs& in, Stage stage, DataOptions& data,
                                 bool share_prompt, AttentionPath attention) {
  if (data.micro_batch_tokens != kAutoMicroBatchTokens) return "";
  const int64_t device = in.device_bytes > 0 ? in.device_bytes : int64_t{80} << 30;
  // Nothing left on a GPU is 0, not the CPU's "unlimited" (-1).
  const int64_t available = in.on_gpu ? std::max<int64_t>(0, device - estimate_memory(config, in).device_states) : -1;
  data.micro_batch_tokens = fit_micro_batch_tokens(config, in, stage, data, share_prompt, attention, available);
  std::ostringstream out;
  out << "micro-batch tokens: auto -> " << data.micro_batch_tokens;
  if (in.on_gpu) {
    out << " (a " << gib(device) << " device less the model states, 3/4 for the full-recompute working set;"
        << " a run decides from its GPU's free memory)";
  } else {
    out << " (the CPU budget)";
  }
  out << "\n";
  return out.str();
}

EstimatePlan estimate_plan(const ModelConfig& model, const TrainConfig& config, int64_t nodes, int64_t ranks_per_node,
                           bool on_gpu) {
  EstimatePlan plan;
  EstimateInputs& in = plan.inputs;
  in.sharding = config.dist.sharding;
  in.nodes = nodes;
  in.ranks_per_node = ranks_per_node;
  in.offload = config.optim.offload == Offload::cpu;
  in.optimizer = config.optim.name;
  in.step_in_backward = config.optim.step_in_backward;
  in.reduce_bytes = config.train.reduce_dtype == ReduceDtype::bf16 ? 2 : 4;
  const ComputeDtype dtype = resolve_compute_dtype(config.train.dtype, on_gpu);
  in.compute_bytes = static_cast<int64_t>(c10::elementSize(compute_scalar_type(dtype)));
  in.on_gpu = on_gpu;
  in.logp_chunk_tokens = config.model.logp_chunk_tokens;
  in.recompute = config.train.recompute;
  in.compute_copy = config.train.compute_copy;
  in.context_parallel = config.dist.context_parallel;
  in.expert_parallel = config.dist.expert_parallel;
  in.device_bytes = static_cast<int64_t>(config.train.memory_budget_gib * 1024.0 * 1024.0 * 1024.0);
  in.adapters = adapter_shape(config);
  TrainConfig sized = config;
  plan.token_budget = resolve_token_budget(model, in, config.train.stage, sized.data, config.dpo.share_prompt,
                                           config.model.attention);
  set_micro_batch(in, largest_micro_batch(sized));
  return plan;
}

std::string format_memory_report(const ModelConfig& config, const std::string& model, const EstimateInputs& in,
                                 const MemoryEstimate& e, double gpu_gib) {
  std::ostringstream out;
  out << "model " << model << ": " << config.parameter_count() << " parameters"
      << (config.experts.num_experts > 0 ? " (" + std::to_string(config.active_parameter_count()) + " active per token)"
                                         : std::string())
      << "; " << in.nodes << " node(s) x "
      << in.ranks_per_node << " ranks; sharding " << enum_name(in.sharding) << " (units split over "
      << e.shard_group << " ranks); optimizer " << enum_name(in.optimizer) << ", offload "
      << (in.offload ? "cpu" : "none") << "\n"
      << "micro-batch: " << in.micro_batch_rows << " row(s) x " << in.seq_len << " tokens"
      << (in.masked_attention ? " (packed or prompt-shared: attention under an explicit mask)" : "")
      << (in.context_parallel > 1 ? ", each row split over " + std::to_string(in.context_parallel) +
                                        " ranks (context parallel; " + std::to_string(in.nodes * in.ranks_per_node /
                                                                                      in.context_parallel) +
                                        " data-parallel)"
                                  : std::string())
      << "\n";
  if (config.experts.num_experts > 0) {
    const ExpertShape& x = config.experts;
    out << "experts: " << x.num_experts << " per sparse layer x " << config.sparse_layer_count() << " layer(s), top "
        << x.experts_per_token << " per token"
        << (in.expert_parallel > 1
                ? "; split over " + std::to_string(in.expert_parallel) + " ranks (dist.expert_parallel): " +
                      std::to_string(x.num_experts / in.expert_parallel) +
                      " each, gathered alone; tokens travel by all-to-all (their buffers counted in the activations)"
                : std::string("; every rank gathers every expert (dist.expert_parallel = 1)"))
        << "\n";
  }
  out << "per rank: " << e.shard_elements << " parameter elements owned\n"
      << (in.compute_copy == ComputeCopy::per_gather ? "  params (fp32 master; cast per gather)"
                                                     : "  params (fp32 master + compute copy) ")
      << gib(e.params) << "\n";
  if (in.adapters.present()) {
    const char* held = !in.adapters.quantized     ? "compute dtype only"
                       : in.adapters.double_quant ? "NF4 projections + 8-bit absmax, the rest in the compute dtype"
                                                  : "NF4 projections + fp32 absmax, the rest in the compute dtype";
    out << "    of which the frozen " << (in.adapters.quantized ? "QLoRA base    " : "LoRA base     ") << gib(e.frozen_bytes)
        << " (" << held << "; r " << in.adapters.r << " adapters on " << in.adapters.targets.size()
        << " projection(s) per layer)\n";
    if (e.frozen_host_bytes > 0) {
      out << "      of which in host memory          " << gib(e.frozen_host_bytes)
          << " (the embedding table; each forward copies its batch's rows, lora.host_embedding)\n";
    }
  }
  out
      << (in.step_in_backward ? "  grads (units in flight; in backward) " : "  grads (shard)                       ")
      << gib(e.grads) << "\n"
      << (in.optimizer == OptimizerName::adamw8bit ? "  optimizer (AdamW m, v in 8 bits)    "
                                                   : "  optimizer (AdamW m, v)              ")
      << gib(e.optimizer) << "\n"
      << "  gathered units + unit gradients     " << gib(e.gathered) << "\n"
      << "  activations (estimate)              " << gib(e.activations) << "\n"
      << "  of which kept by recompute " << enum_name(in.recompute) << "  " << gib(e.kept_activations) << " ("
      << describe_recompute_plan(e.recompute_plan) << ")\n";
  if (in.on_gpu) {
    out << "per GPU: " << gib(e.per_device) << " (states " << gib(e.device_states) << ")";
    if (gpu_gib > 0.0) {
      const double per_device = static_cast<double>(e.per_device) / (1024.0 * 1024.0 * 1024.0);
      out << " -> " << (per_device <= gpu_gib ? "fits" : "does NOT fit") << " a " << gpu_gib << " GiB GPU";
    }
    out << "\n";
  }
  out << "per host: " << gib(e.per_host) << " (" << in.ranks_per_node << " ranks x "
      << gib(e.per_host / in.ranks_per_node) << "; engine memory only, not the runtime's)\n";
  return out.str();
}

}  // namespace st

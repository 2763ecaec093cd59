// Memory needs of the engine before running it (what DeepSpeed's
// estimate_zero3_model_states_mem_needs answers for ZeRO-3): per rank on the GPU and per host,
// from the unit geometry (exact for the model states) plus estimates of the gathered buffers
// and activations. Formulas in docs/fsdp.md, "Memory".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fsdp/recompute.h"
#include "fsdp/sharding.h"
#include "hf/model_config.h"
#include "model/lora.h"
#include "optim/optim_options.h"

namespace st {

// train.method = lora / qlora: the adapters' rank and targets (r 0: every weight is trained),
// and for qlora how the base is quantized (quantized_base.h).
struct AdapterShape {
  int64_t r = 0;
  std::vector<LoraTarget> targets;
  bool quantized = false;
  bool double_quant = true;
  bool host_embedding = true;  // lora.host_embedding (frozen_embedding_on_host)
  bool present() const { return r > 0; }
};

struct EstimateInputs {
  Sharding sharding = Sharding::full;
  int64_t nodes = 1;
  int64_t ranks_per_node = 8;
  bool offload = false;            // AdamW state and fp32 masters in host memory
  OptimizerName optimizer = OptimizerName::adamw;  // adamw8bit: 2 bytes of moments per parameter, not 8
  bool step_in_backward = false;   // gradient shards only while a unit's is reduced and applied
  int64_t reduce_bytes = 4;        // gradient shards across ranks: 4 fp32, 2 bf16 (train.reduce_dtype)
  int64_t compute_bytes = 2;       // 2 for bf16/fp16, 4 for fp32
  bool on_gpu = true;              // false: CPU training, everything is host memory
  int64_t micro_batch_rows = 2;    // rows per micro-batch (a plain DPO pair is 2)
  int64_t seq_len = 2048;          // tokens per row
  int64_t context_parallel = 1;    // ranks that split each row (dist.context_parallel): its tokens / C here
  int64_t expert_parallel = 1;     // ranks that split each sparse layer's experts (dist.expert_parallel)
  bool masked_attention = false;   // packed or prompt-shared rows: a [rows, 1, seq, seq] mask
  int64_t logp_chunk_tokens = 1024;
  Recompute recompute = Recompute::full;
  ComputeCopy compute_copy = ComputeCopy::kept;  // per_gather: no kept copy, the gathered units are casts
  // For recompute = auto: device bytes (a GPU's size) the estimate fills up to; 0 = unlimited.
  int64_t device_bytes = 0;
  AdapterShape adapters;  // LoRA: a frozen base in the compute dtype (QLoRA: NF4), states for the adapters only
};

struct MemoryEstimate {
  int64_t shard_group = 1;         // ranks a unit is split over
  int64_t shard_elements = 0;      // parameters (padded) this rank owns (with adapters: base + adapters)
  int64_t frozen_bytes = 0;        // of `params`: the frozen base of an adapter run (compute dtype or NF4)
  int64_t frozen_host_bytes = 0;   // of `frozen_bytes`: the embedding table kept in host memory
  // Model states per rank, by where they live.
  int64_t params = 0, grads = 0, optimizer = 0;  // as EngineMemory counts them
  int64_t device_states = 0, host_states = 0;
  int64_t gathered = 0;     // gathered units + their gradient buffers at the peak
  int64_t activations = 0;  // saved unit inputs + one unit's recompute + a log-prob chunk + kept
  int64_t kept_activations = 0;         // what the recompute plan keeps beyond full recompute
  std::vector<Recompute> recompute_plan;  // per unit
  int64_t per_device = 0;   // one GPU: device states + gathered + activations (0 on CPU)
  int64_t per_host = 0;     // one node: its ranks' host states (+ working memory on CPU)
};

MemoryEstimate estimate_memory(const ModelConfig& config, const EstimateInputs& inputs);

// What sampling holds on a rank beside its shards (fsdp/whole_model.h, model/generation.h): the
// whole model in the compute dtype (in.compute_bytes; under expert parallelism 1 / P of each
// sparse layer's routed experts), each attention layer's KV cache and each Gated DeltaNet layer's
// recurrent and convolution state for `rows` sequences of up to `tokens` tokens, and a decoding
// step's fp32 logits with their log-softmax. The rest of `in` does not enter.
struct SamplingMemory {
  int64_t weights = 0, caches = 0, logits = 0;
  int64_t total() const { return weights + caches + logits; }
};
SamplingMemory estimate_sampling_memory(const ModelConfig& config, int64_t rows, int64_t tokens,
                                        const EstimateInputs& in);

}  // namespace st

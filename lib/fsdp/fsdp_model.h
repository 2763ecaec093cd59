// The FSDP-sharded model: each rank holds fp32 master shards of every unit; a unit's full
// parameters exist only while it runs (the next unit's gather is started one unit ahead, so at
// most two gathered units are alive). Forward runs a unit keeping what its recompute policy
// says (recompute.h); backward re-gathers (prefetching the unit before it), recomputes with
// grad where needed, and writes each parameter's gradient where it lives: into this rank's
// fp32 gradient shard on one rank, else into a full fp32 buffer that is reduce-scattered
// (summed over the data-parallel ranks: the loss is already normalised) into the shard. The
// step's first contribution writes, later ones add, so the shards are never zero-filled. The
// unit forwards are lib/model's (llama_units.h); this file only schedules them. Strategies and their groups: fsdp/sharding.h.
// An adapter run (LoRA) trains adapter units beside a frozen base (shard_source.h): both are
// gathered per unit, only the adapters get leaves and gradients, and the base alone (adapters
// off) is the DPO reference. A QLoRA base is gathered as its NF4 bytes and dequantized once per
// gather, just before the unit runs (quantized_base.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "distributed/communicator.h"
#include "fsdp/engine_stats.h"
#include "fsdp/recompute.h"
#include "fsdp/router_tally.h"
#include "fsdp/shard_source.h"
#include "fsdp/sharding.h"
#include "fsdp/unit_layout.h"
#include "hf/model_config.h"
#include "model/llama_units.h"

namespace st {

struct FsdpModelOptions {
  at::ScalarType compute_dtype = at::kFloat;  // gathered parameters and activations
  // Gradient reduce-scatter / all-reduce, and the gradient shards they accumulate in (FSDP's
  // reduce_dtype; bf16 halves both). One rank without replicas reduces nothing: fp32 shards.
  at::ScalarType reduce_dtype = at::kFloat;
  at::Device device = at::kCPU;               // where compute shards, gradients and gathers live
  int64_t logp_chunk_tokens = 1024;
  AttentionPath attention = AttentionPath::varlen;  // packed / shared / windowed rows (model_options.h)
  ComputeCopy compute_copy = ComputeCopy::kept;     // fsdp_options.h
  // A frozen model (the DPO reference) runs forward only: no gradient shards, and its "master"
  // shards may already be in the compute dtype (then they are the compute copy).
  bool frozen = false;
  std::vector<Recompute> recompute = {};  // per unit (plan_recompute); empty = full for every layer
  // Adapter runs: the adapters' scale and dropout; dropout_seed seeds the per-pass masks.
  AdapterForward adapter = {};
  // The optimizer steps inside backward (consume_gradients): no gradient shard is allocated up
  // front, each lives only while its unit's gradient is reduced and applied.
  bool gradients_in_flight_only = false;
};

// A unit's gathered flats, one per unit it runs with (units_run_with): the trained ones and,
// with a frozen base, the base's.
struct UnitFlats {
  std::vector<at::Tensor> trainable, frozen;
};

class FsdpModel {
 public:
  // `units` built for groups.shard->size(); `master_shards[u]` is this rank's fp32
  // [shard_numel] of unit u (unit_shards.h), on the device or, for optimizer offload, the host.
  // `base`: an adapter run's frozen model (`units` are then the adapters' units, same count).
  FsdpModel(const ModelConfig& config, std::vector<UnitLayout> units, ShardingGroups& groups,
            std::vector<at::Tensor> master_shards, const FsdpModelOptions& options, FrozenBase base = {});

  // The micro-batch's shared inputs on this model's device (input_ids, targets [R, T] on the
  // host; targets and layout as in collate.h). Built once and given to the policy and the reference.
  // With a context group (groups.context) this rank's chunks of the rows (model/context_split.h),
  // and sequence_logps returns the group's sums (or lines). `token_weights` (MicroBatch's): a model
  // with experts then tallies its routing in differentiated forwards, for router_loss.
  TokenBatch make_batch(const at::Tensor& input_ids, const at::Tensor& targets, const RowLayout& layout = {},
                        const at::Tensor& token_weights = {}) const;
  // Summed response log-probs per sequence [S], or the per-token lines batch.head_output asks
  // ([HeadLine count, S, L], llama_units.h), differentiable: a backward() through it adds the
  // parameter gradients, summed over the data-parallel ranks, to grad_shards(). Collective
  // (every rank must call it, and run backward, the same number of times).
  at::Tensor sequence_logps(const TokenBatch& batch);
  at::Tensor sequence_logps(const at::Tensor& input_ids, const at::Tensor& targets, const RowLayout& layout = {});
  // An adapter run's base alone (adapters off), forward only: the DPO reference without a copy.
  at::Tensor base_sequence_logps(const TokenBatch& batch);
  // The router's load-balancing loss of the last differentiated forward (router_tally.h; its
  // batch had token weights), `output` that forward's: a backward through it adds the routers'
  // gradient. Collective (the expert load's picks are summed over the data-parallel ranks).
  RouterLoss router_loss(const at::Tensor& output);

  const ModelConfig& config() const { return config_; }
  const std::vector<UnitLayout>& units() const { return units_; }
  const FrozenBase& base() const { return base_; }
  bool adapters_on() const { return adapters_on_; }
  ShardingGroups& groups() { return groups_; }
  const FsdpModelOptions& options() const { return options_; }
  // dist.expert_parallel > 1: the sparse layers' all-to-all over the expert group; else null.
  const std::shared_ptr<ExpertExchange>& expert_exchange() const { return experts_; }
  // Per unit (plan_recompute); from the next forward on.
  void set_recompute(std::vector<Recompute> plan);
  std::vector<at::Tensor>& master_shards() { return master_; }
  // Completes any reduction still in flight first; units with no contribution read as zero.
  std::vector<at::Tensor>& grad_shards();
  // Starts a new accumulation: the next contribution to each unit writes instead of adding.
  void zero_grad();
  // The optimizer step inside backward (optim.step_in_backward): while set, each backward pass
  // hands every unit's final gradient shard (reduced) to `consumer` once, as soon as
  // its last contribution is in (a unit's own backward: the tied head's share of the embedding
  // comes earlier), and frees it; a unit with no contribution gets zeros when the pass ends.
  // No full set of gradient shards ever lives. Empty = off: gradients accumulate in grad_shards().
  using GradientConsumer = std::function<void(size_t unit, const at::Tensor& grad)>;
  void consume_gradients(GradientConsumer consumer);
  // The compute-dtype shards when they are a copy apart from the masters (else empty), for an
  // optimizer that writes them in the same pass as the masters.
  std::vector<at::Tensor> compute_copies() const;
  // After the optimizer changed the masters: the compute-dtype copies follow (are made from the
  // masters, unless the optimizer already wrote them in place).
  void refresh_compute_shards(bool written_in_place = false);
  // ComputeCopy::per_gather in effect (the masters live on the compute device).
  bool casts_per_gather() const;

  CommBytes& comm_bytes() { return comm_; }
  EngineMemory memory() const;  // params, grads, gathered_peak (optimizer: ShardedAdamW)
  // A unit's forward saved `bytes` of input for its backward (counted into memory()).
  void note_saved_input(int64_t bytes);
  int64_t gathered_units_alive() const { return static_cast<int64_t>(gathered_.size()); }
  int64_t most_gathered_units_alive() const { return most_alive_; }
  // Units' full gradient buffers (to be reduced) taken and not yet reduced, now and at most.
  int64_t gradient_buffers_alive() const { return gradient_buffers_alive_; }
  int64_t most_gradient_buffers_alive() const { return most_gradient_buffers_alive_; }

  // Where a unit's gradient goes: the gradient shard itself (one rank, `overwrite` for the
  // step's first contribution) or a fresh full buffer to reduce-scatter (always overwritten).
  struct GradTarget {
    size_t unit = 0;
    at::Tensor flat;  // fp32
    bool overwrite = true;
    bool direct = false;
  };

  // Internal to the per-unit autograd function (fsdp_model.cpp).
  Recompute recompute_of(size_t unit) const;
  bool differentiating() const { return differentiating_; }
  std::vector<size_t> units_needed_by(size_t unit) const;  // itself; the tied head also unit 0
  UnitFlats acquire_for_forward(size_t unit);
  void finish_forward(size_t unit);
  // The unit's gathered parameters when its backward reruns it (else none), the previous
  // unit's gather started.
  UnitFlats acquire_for_backward(size_t unit);
  std::vector<GradTarget> grad_targets(size_t unit);
  // One rank and no replicas: gradients go straight into the shards, nothing is reduced.
  bool writes_shards_directly() const { return groups_.shard->size() == 1 && !groups_.replica; }
  // What a gather of unit `unit` laid out as `layout` (the trained one, or the frozen base's)
  // holds: elements [gathered_first, + gathered_numel) of its flat. The whole unit, but under
  // expert parallelism an experts unit's run of this rank's experts, gathered and reduced over
  // groups().expert_shard (group_of).
  int64_t gathered_first(const UnitLayout& layout, size_t unit) const;
  int64_t gathered_numel(const UnitLayout& layout, size_t unit) const;
  Communicator& group_of(size_t unit) const;
  bool splits_experts(size_t unit) const;  // an experts unit under expert parallelism
  at::ScalarType grad_dtype() const { return writes_shards_directly() ? at::kFloat : options_.reduce_dtype; }
  void finish_backward(size_t unit, std::vector<GradTarget>& targets);

 private:
  struct Gathered {
    at::Tensor flat, base_flat;
    at::Tensor source;  // the cast shard an asynchronous gather reads (per_gather), held until done
    Work work, base_work;
    bool base_dequantized = false;  // a quantized base's base_flat holds the unit's values
  };
  struct Reduction {
    size_t unit;
    at::Tensor shard;
    Work work;
    bool written = false;  // reduced straight into the gradient shard
    bool last = false;     // the unit's last contribution of the pass (its own backward)
  };
  void start_gather(size_t unit);
  // This unit's shard in the compute dtype: the kept copy, or the master cast now.
  at::Tensor compute_shard(size_t unit) const;
  at::Tensor gather(Communicator& group, const at::Tensor& shard, Work& work);  // of group.size() shards
  void check_expert_split() const;  // throws ConfigError naming dist.expert_parallel
  void note_gathered_bytes();  // the peak of gathered_peak_
  UnitFlats wait_gathered(size_t unit);
  at::Tensor run_units(const TokenBatch& batch);
  void release(size_t unit);
  void start_reduction(size_t unit, const at::Tensor& flat_grad, bool last);
  at::Tensor& grad_shard(size_t unit);  // allocated when first needed (freed by a consumer)
  void hand_over(size_t unit);          // to the consumer, if any, then freed
  bool gathers_in_backward(size_t unit) const;
  void drain_reductions();
  void complete(std::vector<Reduction>& reductions);

  ModelConfig config_;
  std::vector<UnitLayout> units_;
  FrozenBase base_;
  bool adapters_on_ = true;
  int64_t pass_step_ = -1, passes_in_step_ = 0;  // for dropout seeds that repeat on resume
  ShardingGroups& groups_;
  FsdpModelOptions options_;
  std::vector<at::Tensor> master_, compute_, grads_;
  std::vector<bool> written_;     // grads_[u] holds this accumulation's first contribution
  GradientConsumer consumer_;
  std::vector<bool> handed_over_;  // this pass, with a consumer
  ModelAttention attention_kinds_;  // rotary frequencies and windows, on the device once
  bool differentiating_ = false;  // the forward in progress will be differentiated
  std::map<size_t, Gathered> gathered_;
  std::vector<Reduction> reductions_;
  bool keep_until_backward_ = false;  // grad_op during a forward that will be differentiated
  CommBytes comm_;
  std::shared_ptr<ContextExchange> context_;  // dist.context_parallel > 1: make_batch splits the rows
  std::shared_ptr<ExpertExchange> experts_;   // dist.expert_parallel > 1: the sparse layers' all-to-all
  c10::intrusive_ptr<RouterTally> last_tally_;  // of the last differentiated forward, if it tallied
  int64_t gathered_peak_ = 0, most_alive_ = 0;
  int64_t saved_inputs_ = 0, saved_inputs_peak_ = 0;  // this differentiated forward's, and the most
  int64_t gradient_buffers_alive_ = 0, most_gradient_buffers_alive_ = 0;
};

// Parameter `slot`'s view of a gather that holds its unit's elements from `first` on
// (FsdpModel::gathered_first); undefined when the gather does not hold it (another rank's experts).
at::Tensor gathered_param_view(const at::Tensor& flat, const ParamSlot& slot, int64_t first);

}  // namespace st

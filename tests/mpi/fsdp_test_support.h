// Shared by the FSDP MPI tests: synthetic pairs, the sharding groups of a strategy on this
// world, a single-process libtorch reference trainer (whole model, torch::optim::AdamW), the
// expected shard of a whole-model tensor, and the LoRA and QLoRA engine tests' common setup.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <vector>

#include "data/pair_table.h"
#include "fsdp/fsdp_model.h"
#include "fsdp/sharding.h"
#include "fsdp/unit_layout.h"
#include "hf/model_config.h"
#include "model/llama_blocks.h"
#include "model/lora.h"
#include "optim/optim_options.h"
#include "relative_diff.h"

namespace st::testing {

std::vector<Pair> global_pairs(size_t count, uint64_t seed = 0);
// The pairs of `batch` this world rank trains on (rank_slice of the world).
std::vector<Pair> my_share(const std::vector<Pair>& batch);
// The same for any rank of `size`.
std::vector<Pair> rank_share(const std::vector<Pair>& batch, int rank, int size);

// This world rank's part of per-row values over a whole batch of `pairs` pairs (chosen rows,
// then rejected rows): the rows of my_share's pairs, in the order the engine returns them.
at::Tensor my_rows(const at::Tensor& all_rows, size_t pairs);

// Groups of `strategy` over the world; hybrid declares nodes of size/2 ranks (even sizes), else
// one node.
ShardingGroups test_groups(Sharding strategy);
inline const Sharding kAllShardings[] = {Sharding::full, Sharding::grad_op, Sharding::none, Sharding::hybrid};

// DPO-style loss without a reference model: mean of -log sigmoid(0.1 (chosen - rejected)).
at::Tensor pair_loss(const at::Tensor& logps, int64_t pairs);

// Whole-model single-process training on the global batches: AdamW with decay on matrices only,
// global-norm clipping, as the engine is specified to do.
class ReferenceTrainer {
 public:
  // `dtype` kDouble: the same training in float64, the judge of fp32 results (ST_ROUNDINGS).
  ReferenceTrainer(const ModelConfig& config, uint64_t seed, const OptimOptions& optim,
                   at::ScalarType dtype = at::kFloat);
  ~ReferenceTrainer();
  // One step on `batch`; returns the loss (mean over the pairs) and sets last_grad_norm().
  double step(const std::vector<Pair>& batch, double lr);
  double last_grad_norm() const { return grad_norm_; }
  const TensorMap& weights() const { return whole_; }

 private:
  struct Optimizer;
  ModelConfig config_;
  OptimOptions optim_;
  TensorMap whole_;
  std::unique_ptr<Optimizer> adamw_;
  double grad_norm_ = 0.0;
};

// Per-row summed log-probs of the whole (unsharded) model.
at::Tensor whole_model_logps(const TensorMap& whole, const ModelConfig& config, const at::Tensor& input_ids,
                             const at::Tensor& targets);

// Rank `rank`'s slice of the unit's flat vector assembled from `value(slot)` (a parameter or
// its gradient) in HF order, zero-padded: what that rank's shard must equal.
at::Tensor expected_shard(const UnitLayout& unit, int rank, const std::function<at::Tensor(const ParamSlot&)>& value);
// expected_shard of the gradients whole-model autograd left on `weights`: zeros, in the weights'
// dtype, where no gradient reached a parameter.
at::Tensor expected_grad_shard(const UnitLayout& unit, int rank, const TensorMap& weights);

// The adapter engine tests (LoRA, QLoRA): rank-4 adapters on these targets at scale 2, seeded
// by 11, over 8 pairs, log-probs in chunks of 64 tokens.
inline constexpr uint64_t kAdapterSeed = 11;
inline constexpr int64_t kAdapterRank = 4;
inline constexpr double kAdapterScale = 2.0;
inline constexpr int64_t kAdapterChunk = 64;
inline constexpr const char* kAdapterTargets = "q,v,o,gate,down";

// Whole adapters: A from its seeded init, B random unless `zero_b` (a zero B would leave A
// without gradient).
TensorMap whole_adapters(const ModelConfig& config, bool zero_b = false);
const std::vector<Pair>& adapter_test_pairs();
// The whole model's per-row log-probs over every pair (chosen rows, then rejected rows), with
// the adapters among `weights` at `scale`.
at::Tensor dense_logps(const ModelConfig& config, const TensorMap& weights, double scale);
// This rank's rows of the same through the engine, with the adapters or the base alone.
at::Tensor engine_logps(FsdpModel& model, bool base_only = false);

// The strategy and recompute pairs the adapter gradient tests run.
struct GradientCase {
  Sharding sharding;
  Recompute policy;
};
inline const GradientCase kAdapterGradientCases[] = {
    {Sharding::full, Recompute::full},    {Sharding::full, Recompute::selective}, {Sharding::full, Recompute::none},
    {Sharding::grad_op, Recompute::full}, {Sharding::none, Recompute::selective}, {Sharding::hybrid, Recompute::full}};


}  // namespace st::testing

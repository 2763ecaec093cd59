// Shared by the FSDP MPI tests: synthetic pairs, the sharding groups of a strategy on this
// world, a single-process libtorch reference trainer (whole model, torch::optim::AdamW), and
// the expected shard of a whole-model tensor.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <vector>

#include "data/pair_table.h"
#include "fsdp/sharding.h"
#include "fsdp/unit_layout.h"
#include "hf/model_config.h"
#include "model/llama_blocks.h"
#include "optim/optim_options.h"
#include "relative_diff.h"

namespace st::testing {

std::vector<Pair> global_pairs(size_t count, uint64_t seed = 0);
// The pairs of `batch` this world rank trains on (rank_slice of the world).
std::vector<Pair> my_share(const std::vector<Pair>& batch);

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
  ReferenceTrainer(const ModelConfig& config, uint64_t seed, const OptimOptions& optim);
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


}  // namespace st::testing

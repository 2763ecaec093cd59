// The FSDP-sharded Llama: each rank holds fp32 master shards of every unit; a unit's full
// parameters exist only while it runs. Forward gathers a unit, runs it without keeping
// activations (only its input), and frees the gathered buffer; backward re-gathers, recomputes
// with grad, and reduce-scatters the parameter gradient (average over the group) into this rank's
// fp32 gradient shard. The model blocks never see ranks: they get views of gathered buffers.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "dist/communicator.h"
#include "fsdp/unit_layout.h"
#include "model/model_config.h"

namespace st {

struct FsdpModelOptions {
  at::ScalarType compute_dtype = at::kFloat;  // gathered parameters and activations
  int64_t logp_chunk_tokens = 1024;
};

class FsdpModel {
 public:
  // `master_shards[u]` is this rank's fp32 [shard_numel] of unit u (unit_shards.h).
  FsdpModel(const ModelConfig& config, std::vector<UnitLayout> units, Communicator& group,
            std::vector<at::Tensor> master_shards, const FsdpModelOptions& options);

  // Summed response log-probs per row [R] (targets as in collate.h), differentiable: a
  // backward() through it leaves the averaged parameter gradients in grad_shards().
  // Collective over the group (every rank must call it the same number of times).
  at::Tensor sequence_logps(const at::Tensor& input_ids, const at::Tensor& targets);

  const ModelConfig& config() const { return config_; }
  const std::vector<UnitLayout>& units() const { return units_; }
  std::vector<at::Tensor>& master_shards() { return master_; }
  std::vector<at::Tensor>& grad_shards() { return grads_; }
  void zero_grad();
  // After the optimizer changed the masters: the compute-dtype copies follow.
  void refresh_compute_shards();

  // Internal to the autograd functions (fsdp_model.cpp).
  at::Tensor gather(size_t unit);
  void reduce_gradient(size_t unit, const at::Tensor& flat_grad);
  Communicator& group() { return group_; }
  const FsdpModelOptions& options() const { return options_; }

 private:
  ModelConfig config_;
  std::vector<UnitLayout> units_;
  Communicator& group_;
  FsdpModelOptions options_;
  std::vector<at::Tensor> master_, compute_, grads_;
};

}  // namespace st

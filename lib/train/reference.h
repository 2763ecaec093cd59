// The online DPO reference (dpo.reference = online): a frozen sharded copy of the initial
// policy that runs forward in the same step. It holds compute-dtype shards only - no master
// copy, gradients or optimizer state. In an adapter run (LoRA) it is the policy's own frozen
// base with the adapters off: no copy at all.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>

#include "fsdp/fsdp_model.h"
#include "fsdp/shard_source.h"

namespace st {

class ReferenceModel {
 public:
  // `initial` are the policy's starting shards (copied, in the compute dtype, on the device).
  // Collective over groups: none (construction is local).
  ReferenceModel(const ModelShards& initial, ShardingGroups& groups, const FsdpModelOptions& options);
  // An adapter run's policy (it must outlive this).
  explicit ReferenceModel(FsdpModel& adapter_policy);
  // [S] summed completion log-probs of the batch's sequences under the frozen model, fp32, no
  // grad. Collective over the shard group.
  at::Tensor logps(const TokenBatch& batch);
  at::Tensor logps(const at::Tensor& input_ids, const at::Tensor& targets, const RowLayout& layout = {});

 private:
  std::unique_ptr<FsdpModel> model_;  // the frozen copy, or null
  FsdpModel* adapter_policy_ = nullptr;
};

}  // namespace st

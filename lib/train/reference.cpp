#include "train/reference.h"

#include <ATen/ATen.h>

#include "util/errors.h"

namespace st {

ReferenceModel::ReferenceModel(const ModelShards& initial, ShardingGroups& groups, const FsdpModelOptions& options) {
  FsdpModelOptions frozen = options;
  frozen.frozen = true;
  std::vector<at::Tensor> shards;
  for (const at::Tensor& master : initial.masters) {
    // A copy even where dtype and device match: the policy's masters change in place.
    shards.push_back(master.to(options.device, options.compute_dtype, /*non_blocking=*/false, /*copy=*/true));
  }
  model_ = std::make_unique<FsdpModel>(initial.config, initial.units, groups, std::move(shards), frozen);
}

ReferenceModel::ReferenceModel(FsdpModel& adapter_policy) : adapter_policy_(&adapter_policy) {
  if (!adapter_policy.base().present()) throw ModelError("reference: the policy has no frozen base to run alone");
}

at::Tensor ReferenceModel::logps(const TokenBatch& batch) {
  return adapter_policy_ ? adapter_policy_->base_sequence_logps(batch) : model_->sequence_logps(batch);
}

at::Tensor ReferenceModel::logps(const at::Tensor& input_ids, const at::Tensor& targets, const RowLayout& layout) {
  FsdpModel& model = adapter_policy_ ? *adapter_policy_ : *model_;
  return logps(model.make_batch(input_ids, targets, layout));
}

}  // namespace st

#include "train/reference.h"

#include <ATen/ATen.h>

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

at::Tensor ReferenceModel::logps(const TokenBatch& batch) { return model_->sequence_logps(batch); }

at::Tensor ReferenceModel::logps(const at::Tensor& input_ids, const at::Tensor& targets, const RowLayout& layout) {
  return model_->sequence_logps(input_ids, targets, layout);
}

}  // namespace st

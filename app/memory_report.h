// The memory estimate as `shardtune estimate` and `train --dry-run` print it: model states per
// rank by kind, gathered buffers, activations, per GPU (with the fit against gpu_gib when > 0)
// and per host.
#pragma once

#include <string>

#include "fsdp/memory_estimate.h"
#include "model/model_config.h"

namespace st {

std::string format_memory_report(const ModelConfig& config, const std::string& model, const EstimateInputs& in,
                                 const MemoryEstimate& estimate, double gpu_gib);

}  // namespace st

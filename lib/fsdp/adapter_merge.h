// Adapter units as whole tensors, and folding them into the base's shards: a merged export is
// the base model with W + scale * B A in place of every adapted W, written by the same
// parallel export as a full run's.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "distributed/communicator.h"
#include "fsdp/unit_layout.h"
#include "model/llama_units.h"

namespace st {

// Collective over `world`: every adapter unit whole on every rank (fp32 on the host), by PEFT
// name. `masters` are this rank's shards; only ranks whose `writes` is true contribute theirs
// (replicas hold the same values). Adapters are small: a sum over the world assembles them.
TensorMap gather_adapters(const std::vector<UnitLayout>& units, const std::vector<at::Tensor>& masters, int shard,
                          bool writes, Communicator& world);

// Adds scale * B A to the part of every adapted weight of `config`'s model (each expert's slice of
// a stacked pair: hf/param_table.h adapted_weights) that lies in this rank's shard (`base_shards`
// fp32, laid out by `base_units` for shard `shard`), and puts the base modules trained in full (a
// reward model's score) in place of the base's.
void merge_adapters_into_shards(const ModelConfig& config, const std::vector<UnitLayout>& base_units,
                                std::vector<at::Tensor>& base_shards, int shard, const TensorMap& adapters,
                                double scale);

}  // namespace st

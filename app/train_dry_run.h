// `shardtune train --dry-run`: everything a run checks before it trains - the config, the
// data, the batch geometry, the shard plan and the memory estimate - for this job or, with
// --world NODESxRANKS, for the GPU cluster the job will run on.
#pragma once

#include <string>

#include "distributed/world.h"
#include "train/train_arguments.h"

namespace st {

// Collective over the world when `world_shape` is empty (checks that all ranks match).
void train_dry_run(const ConfigArguments& parsed, World& world, const std::string& world_shape);

}  // namespace st

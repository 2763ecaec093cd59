// One validation pass over a parsed TrainConfig. All problems are collected and thrown as one
// ConfigError whose lines carry the offending values and where they were set.
#pragma once

#include "config/config_schema.h"
#include "train/train_config.h"

namespace st {

// `world_size` is the number of ranks the run will use (batch geometry, node declarations);
// 0 when a command uses the config on another rank count (precompute-ref): those rules are
// then the training run's to check.
void validate_config(const TrainConfig& config, int world_size, const ConfigOrigins& origins = {});

}  // namespace st

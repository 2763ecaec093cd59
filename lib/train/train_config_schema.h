// The key table of a TrainConfig ([model], [data], [train], [dpo], [optim], [dist], [ckpt]).
#pragma once

#include "config/config_schema.h"
#include "train/train_config.h"

namespace st {

// Adds every key to `schema`, bound to the fields of `config` (whose values are the defaults).
void bind_train_config(ConfigSchema& schema, TrainConfig& config);

}  // namespace st

// TrainConfig: the one aggregate of every section, above all of its parts: each section's struct
// lives next to the code that consumes it. Its key table is train_config_schema.h; lib/config
// parses any such table.
#pragma once

#include "ckpt/ckpt_options.h"
#include "data/data_options.h"
#include "distributed/dist_options.h"
#include "eval/eval_options.h"
#include "model/lora_options.h"
#include "model/model_options.h"
#include "optim/optim_options.h"
#include "prep/prep_source_options.h"
#include "train/moe_options.h"
#include "train/train_options.h"

namespace st {

// The objectives' sections (config.dpo, config.kto) come from ObjectiveSections (objective_list.h).
struct TrainConfig : ObjectiveSections {
  ModelOptions model;
  DataOptions data;
  PrepSourceOptions prep;
  TrainOptions train;
  OptimOptions optim;
  DistOptions dist;
  CkptOptions ckpt;
  LoraOptions lora;
  MoeOptions moe;
  EvalOptions eval;
};

}  // namespace st

// What makes a run that run: `--resume auto` continues the run in train.output_dir only while
// these keys are unchanged (the model, the data, the objective, the optimizer's settings); the
// rest may change on a resume (steps, ranks and batch split, checkpoints, logging, evaluation).
#pragma once

#include <string>
#include <vector>

#include "train/train_config.h"

namespace st {

// The run-defining keys whose values differ between `stored_ini` (a checkpoint's resolved
// config) and `config`, as "optim.lr = 5e-05 there, 0.0001 now". Keys the stored text lacks
// (written by an older shardtune) are not compared.
std::vector<std::string> changed_run_keys(const std::string& stored_ini, const TrainConfig& config);

}  // namespace st

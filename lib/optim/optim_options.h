// [optim] section: AdamW, gradient clipping and the learning-rate schedule.
#pragma once

#include <cstdint>
#include <string>

namespace st {

struct OptimOptions {
  double lr = 1e-5;            // peak learning rate
  double beta1 = 0.9;          // AdamW first-moment decay
  double beta2 = 0.999;        // AdamW second-moment decay
  double eps = 1e-8;           // AdamW denominator epsilon
  double weight_decay = 0.0;   // decoupled weight decay (not applied to norms)
  double grad_clip = 1.0;      // max global gradient L2 norm; 0 = no clipping
  std::string schedule = "cosine";  // constant | linear | cosine | cosine_with_min_lr
  int64_t warmup_steps = 0;    // linear warmup [optimizer steps]; excludes warmup_ratio
  double warmup_ratio = 0.0;   // warmup as a fraction of all steps, [0, 1)
  double min_lr_ratio = 0.0;   // floor of cosine_with_min_lr as a fraction of lr, [0, 1]
  std::string offload = "none";  // where AdamW state lives: none (device) | cpu
};

}  // namespace st

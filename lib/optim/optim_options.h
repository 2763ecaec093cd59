// [optim] section: AdamW, gradient clipping and the learning-rate schedule.
#pragma once

#include <cstdint>

#include "util/enum_names.h"

namespace st {

// optim.schedule: the learning rate after warmup (lr_schedule.h).
enum class LrSchedule { constant, linear, cosine, cosine_with_min_lr };
template <>
struct EnumNames<LrSchedule> {
  static constexpr NamedValue<LrSchedule> table[] = {{LrSchedule::constant, "constant"},
                                                     {LrSchedule::linear, "linear"},
                                                     {LrSchedule::cosine, "cosine"},
                                                     {LrSchedule::cosine_with_min_lr, "cosine_with_min_lr"}};
};

// optim.offload: where the AdamW state (masters, moments) lives.
enum class Offload { none, cpu };
template <>
struct EnumNames<Offload> {
  static constexpr NamedValue<Offload> table[] = {{Offload::none, "none"}, {Offload::cpu, "cpu"}};
};

struct OptimOptions {
  double lr = 1e-5;            // peak learning rate
  double beta1 = 0.9;          // AdamW first-moment decay
  double beta2 = 0.999;        // AdamW second-moment decay
  double eps = 1e-8;           // AdamW denominator epsilon
  double weight_decay = 0.0;   // decoupled weight decay (not applied to norms)
  double grad_clip = 1.0;      // max global gradient L2 norm; 0 = no clipping
  LrSchedule schedule = LrSchedule::cosine;  // after warmup: constant | linear | cosine | cosine_with_min_lr
  int64_t warmup_steps = 0;    // linear warmup [optimizer steps]; excludes warmup_ratio
  double warmup_ratio = 0.0;   // warmup as a fraction of all steps, [0, 1)
  double min_lr_ratio = 0.0;   // floor of cosine_with_min_lr as a fraction of lr, [0, 1]
  Offload offload = Offload::none;  // none (device) | cpu
};

}  // namespace st

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

// optim.name: how AdamW keeps its moments. adamw8bit: bitsandbytes' blockwise 8-bit states
// (adamw8bit.h), 2 bytes per parameter instead of 8.
enum class OptimizerName { adamw, adamw8bit };
template <>
struct EnumNames<OptimizerName> {
  static constexpr NamedValue<OptimizerName> table[] = {{OptimizerName::adamw, "adamw"},
                                                        {OptimizerName::adamw8bit, "adamw8bit"}};
};

// optim.offload: where the AdamW state (masters, moments) lives.
enum class Offload { none, cpu };
template <>
struct EnumNames<Offload> {
  static constexpr NamedValue<Offload> table[] = {{Offload::none, "none"}, {Offload::cpu, "cpu"}};
};

struct OptimOptions {
  // The keys of [optim]: their help, unit and range are declared once, in train/train_config_schema.cpp.
  OptimizerName name = OptimizerName::adamw;
  double lr = 1e-5;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double grad_clip = 1.0;
  LrSchedule schedule = LrSchedule::cosine;
  int64_t warmup_steps = 0;
  double warmup_ratio = 0.0;
  double min_lr_ratio = 0.0;
  Offload offload = Offload::none;
  // Each unit's update right after its gradient is reduced in backward, its gradient shard then
  // freed (needs grad_clip = 0 and one micro-batch per step: train_config_validate.cpp).
  bool step_in_backward = false;
};

// Elements every shard of a trained unit is a multiple of: adamw8bit's quantization block, so
// blocks never straddle two ranks and any rank count codes the same blocks.
int64_t shard_multiple_of(OptimizerName name);

}  // namespace st

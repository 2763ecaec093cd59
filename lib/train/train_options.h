// [train] section: the run itself (stage, batch geometry, length, precision, output). The
// objectives' words and their own sections are objective_list.h's.
#pragma once

#include <cstdint>
#include <string>

#include "fsdp/fsdp_options.h"
#include "train/objective_list.h"
#include "util/enum_names.h"

namespace st {

// train.method: what is trained - every weight, or LoRA adapters beside a frozen base (held in
// the compute dtype, or in 4 bits for qlora).
enum class TrainMethod { full, lora, qlora };
template <>
struct EnumNames<TrainMethod> {
  static constexpr NamedValue<TrainMethod> table[] = {
      {TrainMethod::full, "full"}, {TrainMethod::lora, "lora"}, {TrainMethod::qlora, "qlora"}};
};
inline bool trains_adapters(TrainMethod method) { return method != TrainMethod::full; }

// train.dtype: auto = bf16 on GPUs, fp32 on CPUs (train_plan.h resolves it).
enum class ComputeDtype { automatic, fp32, bf16, fp16 };
template <>
struct EnumNames<ComputeDtype> {
  static constexpr NamedValue<ComputeDtype> table[] = {{ComputeDtype::automatic, "auto"},
                                                       {ComputeDtype::fp32, "fp32"},
                                                       {ComputeDtype::bf16, "bf16"},
                                                       {ComputeDtype::fp16, "fp16"}};
};

// train.reduce_dtype: what gradients are reduce-scattered and accumulated in across ranks
// (FSDP's reduce_dtype); bf16 halves the gradient shards and the reduce-scatter bytes.
enum class ReduceDtype { fp32, bf16 };
template <>
struct EnumNames<ReduceDtype> {
  static constexpr NamedValue<ReduceDtype> table[] = {{ReduceDtype::fp32, "fp32"}, {ReduceDtype::bf16, "bf16"}};
};

struct TrainOptions {
  // The keys of [train]: their help, unit and range are declared once, in train/train_config_schema.cpp.
  Stage stage = kDefaultStage;
  TrainMethod method = TrainMethod::full;
  std::string output_dir = "runs/shardtune";
  uint64_t seed = 42;
  int64_t micro_batch = 1;
  int64_t grad_accum = 0;
  int64_t global_batch = 0;
  int64_t max_steps = 0;
  double epochs = 1.0;
  ComputeDtype dtype = ComputeDtype::automatic;
  ReduceDtype reduce_dtype = ReduceDtype::fp32;
  Recompute recompute = Recompute::automatic;
  ComputeCopy compute_copy = ComputeCopy::kept;
  double memory_budget_gib = 0.0;
  int64_t log_every = 10;
  bool tensorboard = true;
  int64_t eval_every = 0;
  bool overwrite = false;
  std::string resume;
  double peak_tflops = 0.0;
};

}  // namespace st

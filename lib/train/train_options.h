// [train] section: the run itself (stage, batch geometry, length, precision, output), and the
// [dpo] section: the preference objective and where its reference log-probs come from.
#pragma once

#include <cstdint>
#include <string>

#include "fsdp/fsdp_options.h"
#include "util/enum_names.h"

namespace st {

// train.stage: the objective.
enum class Stage { sft, dpo, kto };
template <>
struct EnumNames<Stage> {
  static constexpr NamedValue<Stage> table[] = {{Stage::dpo, "dpo"}, {Stage::sft, "sft"}, {Stage::kto, "kto"}};
};

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

// dpo.loss (formulas: objectives.h, docs/objectives.md).
enum class PreferenceLoss { sigmoid, ipo, hinge, simpo, orpo };
template <>
struct EnumNames<PreferenceLoss> {
  static constexpr NamedValue<PreferenceLoss> table[] = {{PreferenceLoss::sigmoid, "sigmoid"},
                                                         {PreferenceLoss::ipo, "ipo"},
                                                         {PreferenceLoss::hinge, "hinge"},
                                                         {PreferenceLoss::simpo, "simpo"},
                                                         {PreferenceLoss::orpo, "orpo"}};
};

// dpo.nll_mean: how the chosen completion's NLL term (dpo.ftx, and orpo's own) is averaged.
// pair: each pair's mean token NLL, averaged over the pairs (LlamaFactory pref_ftx and ORPO);
// micro_batch_tokens: over the chosen tokens of each micro-batch, then averaged over the step's
// micro-batches (TRL's loss_type [..., "sft"] and its ORPO trainer). They differ where chosen
// lengths differ. Details: docs/objectives.md.
enum class NllMean { pair, micro_batch_tokens };
template <>
struct EnumNames<NllMean> {
  static constexpr NamedValue<NllMean> table[] = {{NllMean::pair, "pair"},
                                                  {NllMean::micro_batch_tokens, "micro_batch_tokens"}};
};

// dpo.logged_logps: the log-probs behind logps/* and rewards/*: loss = those the loss uses
// (averages for ipo, simpo and orpo: LlamaFactory, TRL's CPO and ORPO trainers); sum = summed
// completion log-probs for every loss (TRL's DPOTrainer).
enum class LoggedLogps { loss, sum };
template <>
struct EnumNames<LoggedLogps> {
  static constexpr NamedValue<LoggedLogps> table[] = {{LoggedLogps::loss, "loss"}, {LoggedLogps::sum, "sum"}};
};

// dpo.reference: where reference log-probs come from (resolved per run: train_plan.h).
enum class ReferenceChoice { automatic, precomputed, online, none };
template <>
struct EnumNames<ReferenceChoice> {
  static constexpr NamedValue<ReferenceChoice> table[] = {{ReferenceChoice::automatic, "auto"},
                                                          {ReferenceChoice::precomputed, "precomputed"},
                                                          {ReferenceChoice::online, "online"},
                                                          {ReferenceChoice::none, "none"}};
};

struct TrainOptions {
  // The keys of [train]: their help, unit and range are declared once, in train/train_config_schema.cpp.
  Stage stage = Stage::dpo;
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

struct DpoOptions {
  // The keys of [dpo]: their help, unit and range are declared once, in train/train_config_schema.cpp.
  PreferenceLoss loss = PreferenceLoss::sigmoid;
  double beta = 0.1;
  double label_smoothing = 0.0;
  double simpo_gamma = 0.5;
  double ftx = 0.0;
  NllMean nll_mean = NllMean::pair;
  LoggedLogps logged_logps = LoggedLogps::loss;
  bool share_prompt = false;
  ReferenceChoice reference = ReferenceChoice::automatic;
};

struct KtoOptions {
  // The keys of [kto] (train/train_config_schema.cpp), TRL's KTOConfig names and defaults.
  double beta = 0.1;
  double desirable_weight = 1.0;
  double undesirable_weight = 1.0;
};

}  // namespace st

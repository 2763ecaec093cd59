// [train] section: the run itself (stage, batch geometry, length, precision, output), and the
// [dpo] section: the preference objective and where its reference log-probs come from.
#pragma once

#include <cstdint>
#include <string>

#include "fsdp/fsdp_options.h"
#include "util/enum_names.h"

namespace st {

// train.stage: the objective.
enum class Stage { sft, dpo };
template <>
struct EnumNames<Stage> {
  static constexpr NamedValue<Stage> table[] = {{Stage::dpo, "dpo"}, {Stage::sft, "sft"}};
};
// Rows a pair becomes in a batch: chosen and rejected for dpo, one for sft.
inline int64_t sequences_per_pair(Stage stage) { return stage == Stage::dpo ? 2 : 1; }

// train.method: what is trained - every weight, or LoRA adapters beside a frozen base.
enum class TrainMethod { full, lora };
template <>
struct EnumNames<TrainMethod> {
  static constexpr NamedValue<TrainMethod> table[] = {{TrainMethod::full, "full"}, {TrainMethod::lora, "lora"}};
};

// train.dtype: auto = bf16 on GPUs, fp32 on CPUs (train_plan.h resolves it).
enum class ComputeDtype { automatic, fp32, bf16, fp16 };
template <>
struct EnumNames<ComputeDtype> {
  static constexpr NamedValue<ComputeDtype> table[] = {{ComputeDtype::automatic, "auto"},
                                                       {ComputeDtype::fp32, "fp32"},
                                                       {ComputeDtype::bf16, "bf16"},
                                                       {ComputeDtype::fp16, "fp16"}};
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
  Stage stage = Stage::dpo;                  // the objective: dpo | sft
  TrainMethod method = TrainMethod::full;    // full | lora ([lora] section)
  std::string output_dir = "runs/shardtune";  // run directory on shared storage
  uint64_t seed = 42;                        // data order and random init
  int64_t micro_batch = 1;    // pairs (dpo) or sequences (sft) per rank per micro-step
  int64_t grad_accum = 0;     // micro-steps per optimizer step; 0 = auto: global_batch / (micro_batch x dp)
  int64_t global_batch = 0;   // pairs per optimizer step; 0 = micro_batch x grad_accum x dp
  int64_t max_steps = 0;      // optimizer steps; 0 = run train.epochs
  double epochs = 1.0;        // passes over the training data when max_steps is 0
  ComputeDtype dtype = ComputeDtype::automatic;  // auto (bf16 on GPU, fp32 on CPU) | fp32 | bf16 | fp16
  Recompute recompute = Recompute::automatic;  // activation recomputation per decoder layer
  ComputeCopy compute_copy = ComputeCopy::kept;  // bf16 copy of the shards: kept | per_gather (fsdp_options.h)
  double memory_budget_gib = 0.0;  // device memory recompute=auto may fill [GiB]; 0 = free memory less a margin
  int64_t log_every = 10;     // optimizer steps between metric lines
  bool tensorboard = true;    // also write the metrics as TensorBoard event files (<output_dir>/tensorboard)
  int64_t eval_every = 0;     // optimizer steps between evaluations; 0 = only at the end
  bool overwrite = false;     // start over in an output_dir that already holds a run's outputs
  std::string resume;         // "" = start fresh | auto = newest complete checkpoint, if any | a path
  double peak_tflops = 0.0;   // per-device peak for MFU [TFLOP/s]; 0 = known GPUs only
};

struct DpoOptions {
  PreferenceLoss loss = PreferenceLoss::sigmoid;  // sigmoid | ipo | hinge | simpo | orpo
  double beta = 0.1;                 // inverse temperature of the implicit reward
  double label_smoothing = 0.0;      // cDPO / robust DPO label-flip rate, [0, 0.5)
  double simpo_gamma = 0.5;          // SimPO target reward margin
  double ftx = 0.0;                  // weight of the chosen completion's SFT loss
  bool share_prompt = false;         // one [prompt, chosen, rejected] segment per pair
  ReferenceChoice reference = ReferenceChoice::automatic;  // auto | precomputed | online | none
};

}  // namespace st

// [train] section: the run itself (stage, batch geometry, length, precision, output), and the
// [dpo] section: the preference objective and where its reference log-probs come from.
#pragma once

#include <cstdint>
#include <string>

namespace st {

struct TrainOptions {
  std::string stage = "dpo";                 // dpo | sft
  std::string output_dir = "runs/shardtune";  // run directory on shared storage
  uint64_t seed = 42;                        // data order and random init
  int64_t micro_batch = 1;    // pairs (dpo) or sequences (sft) per rank per micro-step
  int64_t grad_accum = 1;     // micro-steps per optimizer step
  int64_t global_batch = 0;   // pairs per optimizer step; 0 = micro_batch x grad_accum x dp
  int64_t max_steps = 0;      // optimizer steps; 0 = run train.epochs
  double epochs = 1.0;        // passes over the training data when max_steps is 0
  std::string dtype = "auto";      // compute dtype: auto (bf16 on GPU, fp32 on CPU) | fp32 | bf16 | fp16
  std::string recompute = "auto";  // activation recomputation: full | selective | none | auto (fsdp/recompute.h)
  double memory_budget_gib = 0.0;  // device memory recompute=auto may fill [GiB]; 0 = free memory less a margin
  int64_t log_every = 10;     // optimizer steps between metric lines
  int64_t eval_every = 0;     // optimizer steps between evaluations; 0 = only at the end
  bool overwrite = false;     // start over in an output_dir that already holds a run's outputs
  std::string resume;         // "" = start fresh | auto = newest complete checkpoint, if any | a path
  double peak_tflops = 0.0;   // per-device peak for MFU [TFLOP/s]; 0 = known GPUs only
  bool time_phases = false;   // not a config key: `shardtune bench` syncs the GPU at phase ends
};

struct DpoOptions {
  std::string loss = "sigmoid";      // sigmoid | ipo | hinge | simpo | orpo
  double beta = 0.1;
  double label_smoothing = 0.0;      // cDPO / robust DPO label-flip rate, [0, 0.5)
  double simpo_gamma = 0.5;          // SimPO target reward margin
  double ftx = 0.0;                  // weight of the chosen completion's SFT loss
  std::string reference = "auto";    // auto | precomputed | online | none
};

}  // namespace st

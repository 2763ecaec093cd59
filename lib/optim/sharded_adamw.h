// AdamW on this rank's fp32 master shards (torch.optim.AdamW's arithmetic: decoupled weight
// decay, bias-corrected moments), the moments m and v sharded like the parameters: fp32
// (optim.name = adamw) or bitsandbytes' blockwise 8-bit codes (adamw8bit, adamw8bit.h; every
// shard whole blocks of 256). Weight decay applies to matrices only, not to norm weights,
// biases or shard padding (HF Trainer's default). Host-resident shards (CPU training, or
// offload: masters and moments in host memory, gradients copied there first) are updated by a
// fused loop on `threads` host threads; GPU shards by cuda/'s fused kernels.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "cuda/adamw_scalars.h"
#include "optim/adamw8bit.h"
#include "optim/decayed_ranges.h"
#include "optim/optim_options.h"

namespace st {

class ShardedAdamW {
 public:
  // Moments are allocated like `masters` (same device); `threads` only matters with offload.
  ShardedAdamW(DecayedRanges decayed, const OptimOptions& options, const std::vector<at::Tensor>& masters,
               int threads = 1);

  // One update of every master shard with its gradient shard (fp32 or bf16) times `grad_scale` ([1] fp32 on
  // the gradients' device, the clip factor of grad_clip.h; undefined = 1) at learning rate
  // `lr`. GPU shards go through cuda/'s fused kernels, which read the factor on the device and
  // also write `compute_copies[u]` (the compute-dtype shards, when given) from the new
  // masters; returns whether it wrote all of them. Equals begin_step + step_unit for each unit.
  bool step(std::vector<at::Tensor>& masters, const std::vector<at::Tensor>& grads, double lr,
            const at::Tensor& grad_scale = {}, const std::vector<at::Tensor>& compute_copies = {});
  // The same, a unit at a time (the step inside backward): begin_step once, then step_unit for
  // each unit in any order; step_unit returns whether it wrote `compute_copy`.
  void begin_step(double lr, const at::Tensor& grad_scale = {});
  bool step_unit(size_t unit, at::Tensor& master, const at::Tensor& grad, const at::Tensor& compute_copy = {});
  // false: GPU fp32 shards take the libtorch op sequence instead (the kernel's reference in tests).
  void use_fused_kernel(bool fused) { fused_kernel_ = fused; }
  int64_t steps_taken() const { return steps_; }
  // A checkpoint's bias-correction step count (its moments are read into the state in place).
  void set_steps_taken(int64_t steps_taken) { steps_ = steps_taken; }
  OptimizerName name() const { return options_.name; }
  // The moments, per unit: fp32 (adamw; empty for adamw8bit) or coded (adamw8bit; else empty).
  std::vector<at::Tensor>& exp_avg() { return m_; }
  std::vector<at::Tensor>& exp_avg_sq() { return v_; }
  std::vector<Moments8bit>& moments8bit() { return coded_; }
  int64_t state_bytes() const;

 private:
  OptimOptions options_;
  int threads_;
  std::vector<at::Tensor> m_, v_;
  std::vector<Moments8bit> coded_;
  DecayedRanges decayed_;
  std::vector<at::Tensor> decayed_on_device_;  // adamw8bit on a GPU: the kernel's (offset, length) pairs
  at::Tensor signed_map_, unsigned_map_;       // adamw8bit on a GPU: the maps the kernel reads
  int64_t steps_ = 0;
  double lr_ = 0.0;
  StAdamWScalars scalars_{};
  at::Tensor grad_scale_;        // of the step begun, on the gradients' device
  float host_grad_scale_ = 1.0f;  // the same, read once for host-resident shards
  bool fused_kernel_ = true;
};

}  // namespace st

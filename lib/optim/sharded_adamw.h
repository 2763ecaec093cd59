// AdamW on this rank's fp32 master shards (torch.optim.AdamW's arithmetic: decoupled weight
// decay, bias-corrected moments), the moments m and v sharded like the parameters. Weight decay
// applies to matrices only, not to norm weights, biases or shard padding (HF Trainer's default).
// Host-resident shards (CPU training, or offload: masters and moments in host memory, gradients
// copied there first) are updated by a fused loop on `threads` host threads.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "distributed/communicator.h"
#include "optim/decayed_ranges.h"
#include "optim/optim_options.h"

namespace st {


class ShardedAdamW {
 public:
  // Moments are allocated like `masters` (same device); `threads` only matters with offload.
  ShardedAdamW(DecayedRanges decayed, const OptimOptions& options, const std::vector<at::Tensor>& masters,
               int threads = 1);

  // One update of every master shard with its gradient shard times `grad_scale` ([1] fp32 on
  // the gradients' device, the clip factor of grad_clip.h; undefined = 1) at learning rate
  // `lr`. GPU shards go through cuda/'s fused kernel, which reads the factor on the device and
  // also writes `compute_copies[u]` (the compute-dtype shards, when given) from the new
  // masters; returns whether it wrote all of them.
  bool step(std::vector<at::Tensor>& masters, const std::vector<at::Tensor>& grads, double lr,
            const at::Tensor& grad_scale = {}, const std::vector<at::Tensor>& compute_copies = {});
  // false: GPU shards take the libtorch op sequence instead (the kernel's reference in tests).
  void use_fused_kernel(bool fused) { fused_kernel_ = fused; }
  int64_t steps_taken() const { return steps_; }
  // A checkpoint's bias-correction step count (its moments are read into exp_avg() in place).
  void set_steps_taken(int64_t steps_taken) { steps_ = steps_taken; }
  std::vector<at::Tensor>& exp_avg() { return m_; }
  std::vector<at::Tensor>& exp_avg_sq() { return v_; }
  int64_t state_bytes() const;

 private:
  OptimOptions options_;
  int threads_;
  std::vector<at::Tensor> m_, v_;
  DecayedRanges decayed_;
  int64_t steps_ = 0;
  bool fused_kernel_ = true;
};

}  // namespace st

// AdamW with 8-bit moments, as bitsandbytes' AdamW8bit keeps them (blockwise, its CPU backend's
// arithmetic): per block of 256 elements, the first moment coded in the signed dynamic map and
// the second in the unsigned one (util/dynamic_quant.h), each block with its fp32 absmax. A step
// dequantizes a block, applies the fp32 AdamW update of sharded_adamw.h to it and its
// parameters, and codes the new moments against the block's new absmax: 2 bytes of state per
// parameter (+ 8 per 256) instead of 8.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "cuda/adamw_scalars.h"
#include "optim/decayed_ranges.h"
#include "optim/optim_options.h"

namespace st {

// The 8-bit moments of one shard of n elements: zero codes and absmax (moments of 0) at first.
struct Moments8bit {
  at::Tensor m_codes, v_codes;    // uint8 [n]
  at::Tensor m_absmax, v_absmax;  // fp32 [ceil(n / 256)]

  static Moments8bit zeros(int64_t n, const at::Device& device = at::kCPU);
  // The fp32 moments `exp_avg` and `exp_avg_sq` [n] coded (a checkpoint of optim.name = adamw
  // resumed as adamw8bit), on their device.
  static Moments8bit quantize(const at::Tensor& exp_avg, const at::Tensor& exp_avg_sq);
  int64_t bytes() const;
  // The moments as fp32 [n] (what the step reads): map value x block absmax.
  at::Tensor exp_avg() const;
  at::Tensor exp_avg_sq() const;
};

// One AdamW8bit update of a host-resident fp32 shard `master` (its gradient `grad` x
// `grad_scale`) with the step's `scalars` (adamw_host.h adamw_scalars), weight decay on `decayed`.
// Blocks start at the shard's element 0: a shard whose length is a multiple of 256 and whose
// offset in its unit is too codes its blocks as the whole unit would.
void adamw8bit_host_step(at::Tensor& master, Moments8bit& moments, const at::Tensor& grad, float grad_scale,
                         const std::vector<ElementRange>& decayed, const StAdamWScalars& scalars, int threads = 1);

}  // namespace st

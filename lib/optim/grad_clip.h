// Global gradient-norm clipping over the shard group, without a host read: the norm and the
// clip factor stay on the gradients' device and the factor is applied inside the AdamW update
// (ShardedAdamW::step's grad_scale), not as a separate pass over the gradients.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "distributed/communicator.h"

namespace st {

struct GradClip {
  at::Tensor norm;   // [1] fp64: the global L2 norm of the (unscaled) gradients, before clipping
  at::Tensor scale;  // [1] fp32: gradient_scale x min(1, max_norm / (norm + 1e-6)) (torch's
                     // clip_grad_norm_); gradient_scale alone when max_norm is 0
};

// Collective over `group` (padding is zero, so the sum of every rank's shard squares is the
// model's). `grads` fp32 or bf16; `gradient_scale` multiplies them first (1 / the fp16 loss scale).
// The squares are summed in fp64 in one pass over the fp32 values (no fp64 copies).
GradClip global_grad_clip(const std::vector<at::Tensor>& grads, double max_norm, Communicator& group,
                          double gradient_scale = 1.0);

// sum(x^2) of an fp32 (or bf16) tensor in fp64 into `sum` ([1] fp64, same device): cuda/'s kernel on a
// GPU, on the host fixed 64K-element blocks summed in order (the same result on any thread count).
void add_sum_of_squares(const at::Tensor& x, at::Tensor& sum);

}  // namespace st

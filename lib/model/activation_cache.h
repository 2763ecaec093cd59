// Selective activation recomputation: a unit's forward without grad records the outputs of its
// matmuls; the recompute in backward replays them. A replayed linear returns the recorded
// output and its backward computes the input and weight gradients from the recomputed input,
// so the recompute redoes only norms, rotary, the attention core and activations, not the
// matmuls. Layers take a nullable cache: null computes the output (full recompute, or none).
// Every differentiated linear, replayed or not, has one backward with fixed products, so the
// recompute policies give bit-identical gradients whatever kernels the BLAS picks for a shape.
#pragma once

#include <ATen/core/Tensor.h>

#include <deque>
#include <vector>

namespace st {

class ActivationCache {
 public:
  ActivationCache() = default;
  // Replays `recorded` (what take_recorded gave).
  explicit ActivationCache(std::vector<at::Tensor> recorded);

  // x [.., in], weight [out, in], bias [out] or undefined -> [.., out].
  at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);
  // The recorded outputs in order, leaving the cache empty.
  std::vector<at::Tensor> take_recorded();

 private:
  enum class Mode { record, replay };
  Mode mode_ = Mode::record;
  std::deque<at::Tensor> outputs_;
};

// x [.., in] -> [.., out] through `cache` when it is given. Under grad mode the backward is
// always grad_x = grad [N, out] . weight and grad_weight = grad^T . x [N, in] on contiguous
// operands, never autograd's at::linear formula, whose operand layouts differ by libtorch
// version (and so do the BLAS calls and their rounding).
at::Tensor linear_op(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, ActivationCache* cache);

}  // namespace st

// Rotary embeddings: the CPU path is transformers' op sequence, and its gradient is the
// transposed rotation the CUDA kernel applies (tests/cuda/test_rope.cpp holds the kernel to it).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include "hf/presets.h"
#include "model/rope.h"

namespace st {
namespace {

TEST(Rope, GradientIsTheTransposedRotation) {
  const ModelConfig config = preset_config("debug");
  const int64_t tokens = 7, head_dim = config.head_dim, half = head_dim / 2;
  const RopeTables tables = make_rope_tables(rope_inverse_frequencies(config), tokens, at::kDouble);
  at::manual_seed(4);
  // q as attention sees it: a transposed view of [B, T, H, D].
  const at::Tensor projected = at::randn({2, tokens, 3, head_dim}, at::kDouble).requires_grad_(true);
  const at::Tensor x = projected.transpose(1, 2);
  const at::Tensor upstream = at::randn({2, 3, tokens, head_dim}, at::kDouble);
  const at::Tensor out = apply_rotary(x, tables);
  EXPECT_TRUE(at::equal(out, apply_rotary_reference(x, tables)));
  torch::autograd::backward({(out * upstream).sum()});

  const at::Tensor a = upstream.narrow(-1, 0, half), b = upstream.narrow(-1, half, half);
  const at::Tensor cos_a = tables.cos.narrow(-1, 0, half), cos_b = tables.cos.narrow(-1, half, half);
  const at::Tensor sin_a = tables.sin.narrow(-1, 0, half), sin_b = tables.sin.narrow(-1, half, half);
  const at::Tensor transposed = at::cat({a * cos_a + b * sin_b, b * cos_b - a * sin_a}, -1);
  EXPECT_TRUE(at::allclose(projected.grad().transpose(1, 2), transposed, 1e-12, 1e-12));
}

}  // namespace
}  // namespace st

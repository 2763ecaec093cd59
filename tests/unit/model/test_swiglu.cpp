// SwiGLU's CPU path is the op sequence transformers runs, silu(gate) * up, in value and
// gradient; its gradient is the closed form the CUDA kernel computes (tests/cuda/test_swiglu.cpp
// holds the kernel to this path).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include "model/swiglu.h"

namespace st {
namespace {

TEST(Swiglu, CpuPathIsTheOpSequenceWithTheKernelsDerivative) {
  at::manual_seed(3);
  const at::Tensor gate_up = (at::randn({2, 5, 14}, at::kDouble) * 3).requires_grad_(true);
  const std::vector<at::Tensor> halves = gate_up.chunk(2, -1);  // a fused projection's output
  const at::Tensor upstream = at::randn({2, 5, 7}, at::kDouble);

  const at::Tensor got = swiglu(halves[0], halves[1]);
  EXPECT_TRUE(at::equal(got, at::silu(halves[0]) * halves[1]));
  torch::autograd::backward({(got * upstream).sum()});

  const at::Tensor g = halves[0].detach(), u = halves[1].detach(), s = at::sigmoid(g);
  const at::Tensor grad_gate = upstream * u * s * (1 + g * (1 - s));  // silu'(g) = s (1 + g (1 - s))
  const at::Tensor grad_up = upstream * g * s;
  EXPECT_TRUE(at::allclose(gate_up.grad(), at::cat({grad_gate, grad_up}, -1), 1e-12, 1e-12));
}

}  // namespace
}  // namespace st

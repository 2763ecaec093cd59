// cuda/'s step kernels against their references at odd sizes: the fp64 sum of squares (the
// grad norm) against the host loop, and the fp32-output GEMM of the lm_head weight gradient
// against libtorch's fp32 product of the same bf16/fp16 inputs, overwriting and accumulating.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "build_config.h"
#include "cuda/gemm_fp32_accumulate.h"

#include "model/token_logp.h"
#include "optim/grad_clip.h"

namespace st {
namespace {

bool cublas_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find("libcublas") != std::string::npos;
}

// cuBLAS is opened by the first product, not at start-up (a CPU run does not map its 600 MB),
// and opens where the toolkit is: no GPU needed, so CI checks what linking it used to check. A
// CUDA libtorch links cuBLAS itself (libtorch_cuda), so there it is mapped before we ask.
TEST(StepKernels, CublasLoadsOnFirstUseNotAtStartUp) {
  if (!ST_TORCH_CUDA) EXPECT_FALSE(cublas_mapped()) << "libcublas is mapped before any product asked for it";
  const char* error = st_cublas_load_error();
  EXPECT_EQ(error, nullptr) << error;
  EXPECT_TRUE(cublas_mapped());
}

TEST(StepKernels, SumOfSquaresMatchesTheHostLoop) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  at::manual_seed(11);
  for (const int64_t n : {int64_t{1}, int64_t{597}, int64_t{1} << 20, (int64_t{1} << 24) + 43}) {
    const at::Tensor x = at::randn({n}) * 1e-2;
    at::Tensor host = at::zeros({1}, at::kDouble);
    add_sum_of_squares(x, host);
    at::Tensor device = at::zeros({1}, at::TensorOptions(at::kDouble).device(at::kCUDA));
    add_sum_of_squares(x.cuda(), device);
    EXPECT_NEAR(device.item<double>(), host.item<double>(), 1e-12 * host.item<double>()) << n;
  }
}

// The head's weight gradient through a sink on the GPU (cuBLAS, fp32 out) equals the fp32
// product of the same 16-bit operands.
TEST(StepKernels, LmHeadGradientSinkSumsInFp32) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  for (const at::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
    at::manual_seed(13);
    const auto gpu = at::TensorOptions(dtype).device(at::kCUDA);
    const at::Tensor hidden = at::randn({597, 43}, gpu).requires_grad_(true);
    const at::Tensor weight = (at::randn({211, 43}, gpu) * 0.3);
    const at::Tensor targets = at::randint(211, {597}, at::TensorOptions(at::kLong).device(at::kCUDA));
    const at::Tensor sink = at::full({211, 43}, 7.0f, at::TensorOptions(at::kFloat).device(at::kCUDA));
    const at::Tensor out = chunked_token_logps(hidden, weight, targets, 100, {sink, true});
    out.sum().backward();
    // Reference: the same per-chunk logits gradients (recomputed here through autograd) in fp32.
    const at::Tensor weight32 = weight.to(at::kFloat).requires_grad_(true);
    const at::Tensor logits = at::matmul(hidden.detach().to(at::kFloat), weight32.t());
    at::log_softmax(logits, -1).gather(1, targets.unsqueeze(1)).sum().backward();
    EXPECT_TRUE(at::allclose(sink, weight32.grad(), 3e-2, 3e-2))
        << c10::toString(dtype) << ": max difference " << (sink - weight32.grad()).abs().max().item<float>();
  }
}

}  // namespace
}  // namespace st

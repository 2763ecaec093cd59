// Attention on the GPU in every row layout (plain, packed, prompt-shared, packed+shared, each
// also under a sliding window) at odd lengths: the varlen path (flash varlen in bf16, per span
// in fp32) against the masked oracle, and packed+shared against the plain rows; per-sequence
// log-probs and every weight gradient, in fp32 and bf16. Skipped without a GPU and a CUDA libtorch.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>

#include "attention_layouts.h"
#include "hf/presets.h"
#include "util/torch_compat.h"

namespace st {
namespace {

using testing::AttentionLayoutCase;

void expect_varlen_equals_masked(at::ScalarType type, double tolerance) {
  const ModelConfig config = preset_config("debug");
  const TensorMap weights = init_preset_weights(config, 7, at::kFloat);
  const std::vector<Pair> pairs = testing::uneven_pairs(9, 21);
  for (const AttentionLayoutCase& c : testing::attention_layout_cases()) {
    const MicroBatch micro = testing::layout_case_batch(pairs, c);
    const auto varlen = testing::logps_and_grads(config, weights, micro, c, AttentionPath::varlen, at::kCUDA, type);
    const auto masked = testing::logps_and_grads(config, weights, micro, c, AttentionPath::masked, at::kCUDA, type);
    testing::expect_logps_and_grads_close(varlen, masked, tolerance, std::string(c.name) + " " + c10::toString(type));
  }
}

TEST(AttentionLayoutsOnGpu, VarlenEqualsTheMaskedPathInFp32) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  expect_varlen_equals_masked(at::kFloat, 1e-4);
}

TEST(AttentionLayoutsOnGpu, VarlenEqualsTheMaskedPathInBf16) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  expect_varlen_equals_masked(at::kBFloat16, 3e-2);
}

// bf16 on a libtorch with the kernel takes flash varlen, which the test above then covers.
TEST(AttentionLayoutsOnGpu, Bf16TakesTheFlashVarlenKernel) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  if (!compat::kHasFlashVarlen) GTEST_SKIP() << "libtorch " << compat::torch_version() << " has no flash varlen";
  EXPECT_TRUE(uses_flash_varlen(at::zeros({4, 4, 16}, at::TensorOptions(at::kCUDA).dtype(at::kBFloat16))));
  EXPECT_FALSE(uses_flash_varlen(at::zeros({4, 4, 16}, at::TensorOptions(at::kCUDA).dtype(at::kFloat))));
}

// Packed + shared rows against the plain rows (causal kernels) through the default path.
void expect_packed_equals_plain(at::ScalarType type, double tolerance) {
  const ModelConfig config = preset_config("debug");
  const TensorMap weights = init_preset_weights(config, 7, at::kFloat);
  const std::vector<Pair> pairs = testing::uneven_pairs(9, 23);
  const auto& cases = testing::attention_layout_cases();
  const AttentionLayoutCase& plain_case = cases[0];
  const AttentionLayoutCase& packed_case = cases[3];
  const auto plain = testing::logps_and_grads(config, weights, testing::layout_case_batch(pairs, plain_case), plain_case,
                                              AttentionPath::varlen, at::kCUDA, type);
  const auto packed = testing::logps_and_grads(config, weights, testing::layout_case_batch(pairs, packed_case),
                                               packed_case, AttentionPath::varlen, at::kCUDA, type);
  testing::expect_logps_and_grads_close(packed, plain, tolerance, c10::toString(type));
}

TEST(PackedRowsOnGpu, EqualThePlainRowsInFp32) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  expect_packed_equals_plain(at::kFloat, 1e-4);
}

TEST(PackedRowsOnGpu, EqualThePlainRowsInBf16) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  expect_packed_equals_plain(at::kBFloat16, 3e-2);
}

}  // namespace
}  // namespace st

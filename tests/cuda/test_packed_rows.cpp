// Packed, prompt-shared rows on the GPU (masked scaled_dot_product_attention, per-row rotary
// tables) against the plain rows (causal kernels): the same per-sequence log-probs and weight
// gradients, in fp32 and bf16. Skipped without a GPU and a CUDA libtorch.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include "data/collate.h"
#include "model/llama_units.h"
#include "model/model_weights.h"
#include "model/presets.h"
#include "parity.h"
#include "prep/synth.h"

namespace st {
namespace {

using st::testing::relative_max_diff;

struct LogpsAndGrads {
  at::Tensor logps;
  std::vector<at::Tensor> grads;
};

LogpsAndGrads run(const ModelConfig& config, const TensorMap& initial, const MicroBatch& micro, at::ScalarType type) {
  TensorMap tensors;
  for (const auto& [name, tensor] : initial) tensors[name] = tensor.to(at::kCUDA, type).requires_grad_(true);
  const at::Tensor inverse = rope_inverse_frequencies(config).to(at::kCUDA);
  const TokenBatch batch = make_token_batch(micro.input_ids, micro.targets, inverse, type, 64, micro.layout);
  const at::Tensor logps = llama_sequence_logps(llama_weights(tensors, config), config, batch);
  torch::autograd::backward({logps.sum()});
  LogpsAndGrads out{logps.detach().cpu(), {}};
  for (const auto& entry : initial) out.grads.push_back(tensors.at(entry.first).grad().to(at::kFloat).cpu());
  return out;
}

void expect_parity(at::ScalarType type, double tolerance) {
  const ModelConfig config = preset_config("debug");
  const TensorMap weights = init_preset_weights(config, 7, at::kFloat);
  SynthOptions synth;
  synth.lengths = SynthLengths::ultrafeedback;
  const PairTable table = synthesize_pairs(synth, 0, 6);
  std::vector<Pair> pairs;
  for (size_t i = 0; i < table.size(); ++i) pairs.push_back(table.at(i));
  CollateOptions laid;
  laid.packing = laid.share_prompt = true;
  const LogpsAndGrads plain = run(config, weights, collate_pairs(pairs, PairKind::dpo, {}), type);
  const LogpsAndGrads packed = run(config, weights, collate_pairs(pairs, PairKind::dpo, laid), type);
  EXPECT_LE(relative_max_diff(packed.logps, plain.logps), tolerance) << c10::toString(type);
  for (size_t i = 0; i < plain.grads.size(); ++i) {
    EXPECT_LE(relative_max_diff(packed.grads[i], plain.grads[i]), tolerance) << c10::toString(type) << " grad " << i;
  }
}

TEST(PackedRowsOnGpu, EqualThePlainRowsInFp32) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  expect_parity(at::kFloat, 1e-4);
}

TEST(PackedRowsOnGpu, EqualThePlainRowsInBf16) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  expect_parity(at::kBFloat16, 3e-2);
}

}  // namespace
}  // namespace st

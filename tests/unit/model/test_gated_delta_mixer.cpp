// Gated DeltaNet's token mixer on packed rows and in parts (model/gated_delta_mixer.h): each
// sequence of a packed row gives what it gives alone (the conv window and the recurrent state
// restart at its start); a sequence in parts chained by their carry gives the whole, and a
// prompt's carry feeds each completion with gradients through it, in float64. transformers' own layer is the oracle of the unpacked mixer
// (oracle_gated_delta_mixer). Bound: the same operations on the same values, chunked from another
// offset: float64 rounding of sums of a few hundred terms, below 1e-13 of the scale; 1e-10 is
// over 1000x that (measured: at most 2.6e-15; the same row unpacked differs by 0.93).
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "model/gated_delta_mixer.h"

namespace st {
namespace {

struct Layer {
  GatedDeltaShape shape;
  GatedDeltaWeights weights;
};

Layer random_layer(int64_t hidden) {
  at::manual_seed(4);
  Layer l;
  l.shape.key_heads = 2;
  l.shape.value_heads = 4;
  l.shape.key_head_dim = 4;
  l.shape.value_head_dim = 3;
  l.shape.chunk = 16;
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  const auto weight = [&](int64_t rows, int64_t cols) { return at::randn({rows, cols}, f64) * 0.3; };
  l.weights.in_proj_qkv = weight(l.shape.conv_channels(), hidden);
  l.weights.in_proj_z = weight(l.shape.value_dim(), hidden);
  l.weights.in_proj_b = weight(l.shape.value_heads, hidden);
  l.weights.in_proj_a = weight(l.shape.value_heads, hidden);
  l.weights.conv1d = at::randn({l.shape.conv_channels(), 1, 4}, f64) * 0.5;
  l.weights.dt_bias = at::randn({l.shape.value_heads}, f64);
  l.weights.A_log = at::log(at::rand({l.shape.value_heads}, f64) * 3 + 0.5);
  l.weights.norm = 1 + 0.3 * at::randn({l.shape.value_head_dim}, f64);
  l.weights.out_proj = weight(hidden, l.shape.value_dim());
  return l;
}

double relative(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>() / b.abs().max().item<double>();
}

TEST(GatedDeltaMixer, EachPackedSequenceGivesWhatItGivesAlone) {
  const Layer l = random_layer(12);
  const std::vector<int64_t> lengths = {5, 70, 1, 20};  // across chunk edges, a one-token sequence
  std::vector<at::Tensor> alone, inputs;
  std::vector<int64_t> starts = {0};
  for (const int64_t length : lengths) {
    const at::Tensor x = at::randn({1, length, 12}, at::kDouble);
    inputs.push_back(x);
    alone.push_back(gated_delta_mixer(x, l.weights, l.shape));
    starts.push_back(starts.back() + length);
  }
  const at::Tensor packed = gated_delta_mixer(at::cat(inputs, 1), l.weights, l.shape, &starts);
  EXPECT_LE(relative(packed, at::cat(alone, 1)), 1e-10);
  // Unpacked, the same row mixes them: the test can tell.
  EXPECT_GT(relative(gated_delta_mixer(at::cat(inputs, 1), l.weights, l.shape), at::cat(alone, 1)), 1e-3);
}

TEST(GatedDeltaMixer, RowsOfSeveralSequencesKeepTheirShapeAndStartAtEachRow) {
  const Layer l = random_layer(12);
  const at::Tensor rows = at::randn({2, 30, 12}, at::kDouble);
  const std::vector<int64_t> starts = {0, 11, 30, 52, 60};  // row 0: 11 + 19, row 1: 22 + 8
  const at::Tensor packed = gated_delta_mixer(rows, l.weights, l.shape, &starts);
  ASSERT_EQ(packed.sizes(), rows.sizes());
  const at::Tensor flat = rows.reshape({1, 60, 12});
  for (size_t i = 0; i + 1 < starts.size(); ++i) {
    const at::Tensor alone = gated_delta_mixer(flat.narrow(1, starts[i], starts[i + 1] - starts[i]), l.weights, l.shape);
    EXPECT_LE(relative(packed.reshape({1, 60, 12}).narrow(1, starts[i], starts[i + 1] - starts[i]), alone), 1e-10) << i;
  }
}

TEST(GatedDeltaMixer, PackedRowsAreDifferentiableInEveryWeight) {
  Layer l = random_layer(8);
  std::vector<at::Tensor*> leaves = {&l.weights.in_proj_qkv, &l.weights.in_proj_z, &l.weights.in_proj_b,
                                     &l.weights.in_proj_a,   &l.weights.conv1d,    &l.weights.dt_bias,
                                     &l.weights.A_log,       &l.weights.norm,      &l.weights.out_proj};
  for (at::Tensor* leaf : leaves) *leaf = leaf->detach().requires_grad_(true);
  const std::vector<int64_t> starts = {0, 9, 25};
  gated_delta_mixer(at::randn({1, 25, 8}, at::kDouble), l.weights, l.shape, &starts).pow(2).sum().backward();
  for (at::Tensor* leaf : leaves) {
    ASSERT_TRUE(leaf->grad().defined());
    EXPECT_GT(leaf->grad().abs().sum().item<double>(), 0.0);
  }
}

// A sequence in parts, each continuing from the last one's carry (the conv inputs and the state),
// gives the whole; parts shorter than the conv window included.
TEST(GatedDeltaMixer, PartsChainedThroughTheirCarryGiveTheWholeSequence) {
  const Layer l = random_layer(12);
  const at::Tensor whole = at::randn({2, 90, 12}, at::kDouble);
  const at::Tensor reference = gated_delta_mixer(whole, l.weights, l.shape);
  GatedDeltaCarry carry;
  std::vector<at::Tensor> parts;
  int64_t begin = 0;
  for (const int64_t count : {2, 1, 40, 47}) {
    const GatedDeltaStep step = gated_delta_mixer_step(whole.narrow(1, begin, count), l.weights, l.shape, carry);
    parts.push_back(step.out);
    carry = step.carry;
    begin += count;
  }
  EXPECT_LE(relative(at::cat(parts, 1), reference), 1e-10);
  EXPECT_EQ(carry.conv_inputs.sizes(), (std::vector<int64_t>{2, 3, l.shape.conv_channels()}));
}

// Prompt sharing: the prompt's carry feeds both completions; their outputs and the prompt's
// gradient (through the carry, from both) equal those of the two whole sequences.
TEST(GatedDeltaMixer, APromptsCarryFeedsEachCompletionWithGradientsThroughIt) {
  const Layer l = random_layer(12);
  const at::Tensor prompt0 = at::randn({1, 30, 12}, at::kDouble);
  const at::Tensor chosen = at::randn({1, 17, 12}, at::kDouble), rejected = at::randn({1, 25, 12}, at::kDouble);
  const at::Tensor weight_chosen = at::randn({1, 17, 12}, at::kDouble), weight_rejected = at::randn({1, 25, 12}, at::kDouble);

  at::Tensor prompt = prompt0.clone().requires_grad_(true);
  const GatedDeltaStep shared = gated_delta_mixer_step(prompt, l.weights, l.shape);
  const at::Tensor out_chosen = gated_delta_mixer_step(chosen, l.weights, l.shape, shared.carry).out;
  const at::Tensor out_rejected = gated_delta_mixer_step(rejected, l.weights, l.shape, shared.carry).out;
  ((out_chosen * weight_chosen).sum() + (out_rejected * weight_rejected).sum()).backward();
  const at::Tensor shared_grad = prompt.grad().clone();

  at::Tensor prompt_a = prompt0.clone().requires_grad_(true), prompt_b = prompt0.clone().requires_grad_(true);
  const at::Tensor whole_chosen = gated_delta_mixer(at::cat({prompt_a, chosen}, 1), l.weights, l.shape);
  const at::Tensor whole_rejected = gated_delta_mixer(at::cat({prompt_b, rejected}, 1), l.weights, l.shape);
  ((whole_chosen.narrow(1, 30, 17) * weight_chosen).sum() + (whole_rejected.narrow(1, 30, 25) * weight_rejected).sum())
      .backward();
  EXPECT_LE(relative(out_chosen, whole_chosen.narrow(1, 30, 17)), 1e-10);
  EXPECT_LE(relative(out_rejected, whole_rejected.narrow(1, 30, 25)), 1e-10);
  EXPECT_LE(relative(shared_grad, prompt_a.grad() + prompt_b.grad()), 1e-10);
}

}  // namespace
}  // namespace st

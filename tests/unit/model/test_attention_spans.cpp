// Variable-length attention (attention_spans.h) against the masked oracle: the offsets a row
// layout gives, the per-span op on random tensors (fp64, grouped-query heads), and the whole
// model forward and backward in every layout at odd lengths (fp32 and fp64).
#include "model/attention_spans.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include "attention_layouts.h"
#include "hf/presets.h"
#include "util/torch_compat.h"

namespace st {
namespace {

using testing::attention_layout_cases;
using testing::AttentionLayoutCase;
using testing::layout_case_batch;
using testing::uneven_pairs;

std::vector<int64_t> host_vector(const at::Tensor& t) {
  const at::Tensor host = t.to(at::kCPU, at::kLong).contiguous();
  return {host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel()};
}

at::Tensor row(std::vector<int64_t> values) {
  const auto length = static_cast<int64_t>(values.size());
  return at::tensor(values, at::kLong).view({1, length});
}

// One row: a shared DPO segment (prompt 2, chosen 3, rejected 2), an SFT sequence of 2, padding.
RowLayout hand_layout() {
  RowLayout layout;
  layout.segment_ids = row({0, 0, 0, 0, 0, 0, 0, 1, 1, kPaddingSegment});
  layout.branch_ids = row({0, 0, 1, 1, 1, 2, 2, 0, 0, 0});
  layout.position_ids = row({0, 1, 2, 3, 4, 2, 3, 0, 1, 0});
  layout.sequence_ids = at::full({1, 10}, -1, at::kLong);
  layout.sequences = 3;
  return layout;
}

TEST(AttentionSpans, BranchesSeeTheirPromptThenThemselves) {
  const AttentionSpans spans = layout_spans(hand_layout(), 0, at::kCPU);
  ASSERT_TRUE(spans.defined());
  EXPECT_EQ(spans.query_starts, (std::vector<int64_t>{0, 2, 5, 7, 9, 10}));
  EXPECT_EQ(spans.key_starts, (std::vector<int64_t>{0, 2, 7, 11, 13, 14}));
  ASSERT_TRUE(spans.key_tokens.defined());
  EXPECT_EQ(host_vector(spans.key_tokens), (std::vector<int64_t>{0, 1, 0, 1, 2, 3, 4, 0, 1, 5, 6, 7, 8, 9}));
  EXPECT_EQ(host_vector(spans.query_offsets), spans.query_starts);
  EXPECT_EQ(spans.query_offsets.scalar_type(), at::kInt);  // the flash kernel's offsets
  EXPECT_EQ(spans.longest_query, 3);
  EXPECT_EQ(spans.longest_key, 5);
}

TEST(AttentionSpans, WithoutASharedPromptTheKeysAreTheQueries) {
  const MicroBatch packed = layout_case_batch(uneven_pairs(6, 3), attention_layout_cases()[1]);
  const AttentionSpans spans = layout_spans(packed.layout, 0, at::kCPU);
  ASSERT_TRUE(spans.defined());
  EXPECT_FALSE(spans.key_tokens.defined());
  EXPECT_EQ(spans.key_starts, spans.query_starts);
  EXPECT_EQ(spans.query_starts.back(), packed.input_ids.numel());
  EXPECT_GE(spans.count(), 12);  // 12 sequences, packed into fewer rows
  EXPECT_LT(packed.input_ids.size(0), 12);
}

// A layout collate never builds (a branch ahead of its prompt) keeps the mask.
TEST(AttentionSpans, AnUnusualLayoutFallsBackToTheMask) {
  RowLayout layout = hand_layout();
  layout.branch_ids = row({1, 1, 0, 0, 0, 2, 2, 0, 0, 0});
  EXPECT_FALSE(layout_spans(layout, 0, at::kCPU).defined());
  const ModelConfig config = preset_config("debug");
  const at::Tensor ids = at::ones({1, 10}, at::kLong);
  const TokenBatch batch = make_token_batch(ids, at::full({1, 10}, -100, at::kLong), rope_inverse_frequencies(config),
                                            at::kFloat, 16, layout);
  EXPECT_FALSE(batch.positions.spans.defined());
  EXPECT_TRUE(batch.positions.attention_mask.defined());
}

// The op alone: random q/k/v (fp64, 4 query heads over 2 k/v heads), spans against
// scaled-dot-product attention under the layout's mask, outputs and input gradients at every
// real token (padding attends only to padding; what it computes feeds nothing).
TEST(AttentionSpans, SpanAttentionEqualsTheMaskedOracle) {
  const ModelConfig config = preset_config("debug");
  const at::Tensor inverse = rope_inverse_frequencies(config);
  for (const AttentionLayoutCase& c : attention_layout_cases()) {
    const MicroBatch micro = layout_case_batch(uneven_pairs(7, 11), c);
    const auto rows = micro.input_ids.size(0), length = micro.input_ids.size(1);
    const TokenBatch varlen = make_token_batch(micro.input_ids, micro.targets, inverse, at::kDouble, 16, micro.layout,
                                               c.window, AttentionPath::varlen);
    const TokenBatch masked = make_token_batch(micro.input_ids, micro.targets, inverse, at::kDouble, 16, micro.layout,
                                               c.window, AttentionPath::masked);
    if (!varlen.positions.spans.defined()) {  // plain rows without a window: the causal kernels
      EXPECT_FALSE(masked.positions.attention_mask.defined()) << c.name;
      continue;
    }
    ASSERT_TRUE(masked.positions.attention_mask.defined()) << c.name;
    at::manual_seed(5);
    const auto options = at::TensorOptions(at::kDouble);
    const at::Tensor q = at::randn({rows * length, 4, 8}, options).requires_grad_(true);
    const at::Tensor k = at::randn({rows * length, 2, 8}, options).requires_grad_(true);
    const at::Tensor v = at::randn({rows * length, 2, 8}, options).requires_grad_(true);
    // Plain rows attend over the whole row in both paths, padding included.
    const at::Tensor real = micro.layout.defined() ? micro.layout.segment_ids.reshape({-1}).ne(kPaddingSegment)
                                                   : at::ones({rows * length}, at::kBool);
    const at::Tensor upstream = at::randn({rows * length, 4, 8}, options) * real.view({-1, 1, 1});

    const at::Tensor got = span_attention(q, k, v, varlen.positions.spans);
    const auto grads = torch::autograd::grad({got}, {q, k, v}, {upstream});
    // [N, h, d] -> [R, h, T, d], k/v heads repeated for the oracle.
    auto heads_first = [&](const at::Tensor& t, int64_t repeats) {
      return t.view({rows, length, t.size(1), 1, 8}).expand({rows, length, t.size(1), repeats, 8})
          .reshape({rows, length, t.size(1) * repeats, 8}).transpose(1, 2);
    };
    const at::Tensor want = compat::masked_attention(heads_first(q, 1), heads_first(k, 2), heads_first(v, 2),
                                                     masked.positions.attention_mask)
                                .transpose(1, 2).reshape({rows * length, 4, 8});
    const auto want_grads = torch::autograd::grad({want}, {q, k, v}, {upstream});
    EXPECT_LT(ST_RELATIVE_DIFF(got.index({real}), want.index({real}), 1e-12), 1e-12) << c.name;
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_LT(ST_RELATIVE_DIFF(grads[i].index({real}), want_grads[i].index({real}), 1e-12), 1e-12)
          << c.name << " grad " << i;
    }
  }
}

// The whole model: per-sequence log-probs and every parameter's gradient of the varlen path
// against the masked one, in fp32 and fp64.
TEST(AttentionSpans, ModelForwardAndBackwardEqualTheMaskedPath) {
  const ModelConfig config = preset_config("debug");
  const TensorMap weights = init_preset_weights(config, 9, at::kFloat);
  for (const auto& [type, tolerance] : {std::pair{at::kFloat, 2e-5}, std::pair{at::kDouble, 1e-11}}) {
    for (const AttentionLayoutCase& c : attention_layout_cases()) {
      const MicroBatch micro = layout_case_batch(uneven_pairs(7, 13), c);
      const auto varlen = testing::logps_and_grads(config, weights, micro, c, AttentionPath::varlen, at::kCPU, type);
      const auto masked = testing::logps_and_grads(config, weights, micro, c, AttentionPath::masked, at::kCPU, type);
      testing::expect_logps_and_grads_close(varlen, masked, tolerance, std::string(c.name) + " " + c10::toString(type));
    }
  }
}

}  // namespace
}  // namespace st

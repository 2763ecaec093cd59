// The lm head's per-token output (HeadOutput::token_lines*, what GRPO's per-token ratio reads):
// in every row layout each target's log-prob sits at its slot of its sequence's line, 1 marks the
// slot in the targets line, the entropy of its position fills the entropies line, and the lines
// sum to the sequence sums the offline objectives read, to the bit.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "attention_layouts.h"
#include "hf/model_weights.h"
#include "hf/presets.h"
#include "model/llama_units.h"

namespace st {
namespace {

using testing::attention_layout_cases;
using testing::layout_case_batch;
using testing::uneven_pairs;

at::Tensor line(const at::Tensor& lines, HeadLine which) { return lines[static_cast<int64_t>(which)]; }

TEST(HeadLines, EachTargetSitsAtItsSlotAndTheLinesSumToTheSequenceSums) {
  const ModelConfig config = preset_config("debug");
  const TensorMap weights = init_preset_weights(config, 5, at::kDouble);
  const LlamaWeights model = llama_weights(weights, config);
  const std::vector<Pair> pairs = uneven_pairs(6, 9);
  for (const auto& c : attention_layout_cases()) {
    const MicroBatch micro = layout_case_batch(pairs, c);
    TokenBatch batch = make_token_batch(micro.input_ids, micro.targets, model_attention(config, at::kCPU), at::kDouble,
                                        16, micro.layout);
    const at::Tensor sums = llama_sequence_logps(model, config, batch);
    const at::Tensor targets = llama_target_logps(model, config, batch);
    batch.head_output = HeadOutput::token_lines_with_entropies;
    const at::Tensor lines = llama_sequence_logps(model, config, batch);
    batch.head_output = HeadOutput::token_lines;
    const at::Tensor plain_lines = llama_sequence_logps(model, config, batch);

    ASSERT_EQ(lines.dim(), 3) << c.name;
    EXPECT_EQ(lines.size(0), head_line_count(HeadOutput::token_lines_with_entropies)) << c.name;
    EXPECT_EQ(lines.size(1), sums.size(0)) << c.name;
    EXPECT_TRUE(at::equal(line(lines, HeadLine::logps).sum(1), sums)) << c.name;
    EXPECT_TRUE(at::equal(plain_lines, lines.narrow(0, 0, 2))) << c.name;
    // The targets' values at their slots (in fp32, as the sums), the targets line 1 there and 0
    // elsewhere.
    const at::Tensor flat_logps = line(lines, HeadLine::logps).reshape(-1);
    EXPECT_TRUE(at::equal(flat_logps.index_select(0, batch.target_slots), targets.to(at::kFloat))) << c.name;
    const at::Tensor marks = line(lines, HeadLine::targets);
    EXPECT_EQ(marks.sum().item<double>(), static_cast<double>(batch.target_slots.size(0))) << c.name;
    EXPECT_TRUE(marks.reshape(-1).index_select(0, batch.target_slots).eq(1).all().item<bool>()) << c.name;
    // Entropies: positive at the targets' positions (a softmax over 2+ tokens), 0 where no target.
    const at::Tensor entropies = line(lines, HeadLine::entropies);
    EXPECT_TRUE(entropies.reshape(-1).index_select(0, batch.target_slots).gt(0).all().item<bool>()) << c.name;
    EXPECT_TRUE(entropies.masked_select(marks.eq(0)).eq(0).all().item<bool>()) << c.name;
    EXPECT_TRUE(flat_logps.masked_select(marks.reshape(-1).eq(0)).eq(0).all().item<bool>()) << c.name;
  }
}

}  // namespace
}  // namespace st

// The memory plan counts context parallelism: each rank holds 1/C of every row's tokens (padded
// to 2C chunks) plus the group's gathered keys and values of one layer, while the model states
// stay those of the whole world. Llama-3.1-8B DPO at 32k tokens on 2 x 8 GPUs: whole rows do
// not fit a 40 GB GPU, rows split over 2 do (docs/tuning.md's table).
#include <gtest/gtest.h>

#include "fsdp/memory_estimate.h"
#include "hf/presets.h"

namespace st {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

EstimateInputs dpo_rows_on_2x8(int64_t seq, int64_t parts) {
  EstimateInputs in;
  in.nodes = 2;
  in.ranks_per_node = 8;
  in.compute_bytes = 2;
  in.micro_batch_rows = 2;
  in.seq_len = seq;
  in.recompute = Recompute::full;
  in.context_parallel = parts;
  return in;
}

TEST(ContextEstimate, ActivationsFallAsOneOverCAndStatesStay) {
  const ModelConfig config = preset_config("llama-3.1-8b");
  const MemoryEstimate whole = estimate_memory(config, dpo_rows_on_2x8(32768, 1));
  for (const int64_t parts : {2, 4, 8}) {
    const MemoryEstimate split = estimate_memory(config, dpo_rows_on_2x8(32768, parts));
    EXPECT_EQ(split.device_states, whole.device_states) << parts;
    EXPECT_EQ(split.gathered, whole.gathered) << parts;
    const double ratio = static_cast<double>(split.activations) / static_cast<double>(whole.activations);
    // 1/C of the tokens, plus the gathered keys and values of the whole rows.
    EXPECT_GT(ratio, 1.0 / static_cast<double>(parts)) << parts;
    EXPECT_LT(ratio, 1.1 / static_cast<double>(parts) + 0.01) << parts;
  }
}

TEST(ContextEstimate, RowsArePaddedToTwoCChunks) {
  const ModelConfig config = preset_config("llama-3.1-8b");
  EXPECT_EQ(estimate_memory(config, dpo_rows_on_2x8(32761, 4)).activations,
            estimate_memory(config, dpo_rows_on_2x8(32768, 4)).activations);
}

TEST(ContextEstimate, EightBillionDpoAt32kFitsFortyGbOnlySplit) {
  const ModelConfig config = preset_config("llama-3.1-8b");
  EXPECT_GT(static_cast<double>(estimate_memory(config, dpo_rows_on_2x8(32768, 1)).per_device) / kGiB, 40.0);
  EXPECT_LT(static_cast<double>(estimate_memory(config, dpo_rows_on_2x8(32768, 2)).per_device) / kGiB, 40.0);
  EXPECT_GT(static_cast<double>(estimate_memory(config, dpo_rows_on_2x8(65536, 2)).per_device) / kGiB, 40.0);
  EXPECT_LT(static_cast<double>(estimate_memory(config, dpo_rows_on_2x8(65536, 4)).per_device) / kGiB, 40.0);
}

}  // namespace
}  // namespace st

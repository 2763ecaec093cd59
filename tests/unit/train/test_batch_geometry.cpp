// A run's global batch and accumulation (train_plan.h resolve_batch_geometry): a resumed run keeps
// its checkpoint's global batch on any rank count, whatever accumulation the config wrote; what
// cannot keep it is refused naming the rank counts and micro-batches that can.
#include <gtest/gtest.h>

#include "train/train_plan.h"
#include "util/errors.h"

namespace st {
namespace {

TrainConfig with_batch(int64_t micro_batch, int64_t grad_accum, int64_t global_batch = 0) {
  TrainConfig config;
  config.train.micro_batch = micro_batch;
  config.train.grad_accum = grad_accum;
  config.train.global_batch = global_batch;
  return config;
}

std::string refusal(const TrainConfig& config, int world_size, int64_t resumed, int context_size = 1) {
  try {
    resolve_batch_geometry(config, world_size, resumed, context_size);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(BatchGeometry, FreshRunIsMicroTimesAccumulationTimesRanks) {
  const BatchGeometry fixed = resolve_batch_geometry(with_batch(8, 2), 2);
  EXPECT_EQ(fixed.global_batch, 32);
  EXPECT_EQ(fixed.grad_accum, 2);
  const BatchGeometry automatic = resolve_batch_geometry(with_batch(8, 0), 2);
  EXPECT_EQ(automatic.global_batch, 16);
  EXPECT_EQ(automatic.grad_accum, 1);
  const BatchGeometry global = resolve_batch_geometry(with_batch(2, 0, 24), 3);
  EXPECT_EQ(global.global_batch, 24);
  EXPECT_EQ(global.grad_accum, 4);
}

// A LlamaFactory YAML's gradient_accumulation_steps (here 1, trained on 2 ranks: 16 pairs) is the
// first run's: resumed on 1 or 4 ranks, the accumulation follows the checkpoint's global batch.
TEST(BatchGeometry, ResumeKeepsTheCheckpointsGlobalBatchOnAnyRankCount) {
  for (const int64_t written : {0, 1, 2}) {
    const BatchGeometry one = resolve_batch_geometry(with_batch(8, written), 1, 16);
    EXPECT_EQ(one.global_batch, 16);
    EXPECT_EQ(one.grad_accum, 2);
    const BatchGeometry two = resolve_batch_geometry(with_batch(4, written), 4, 16);
    EXPECT_EQ(two.global_batch, 16);
    EXPECT_EQ(two.grad_accum, 1);
  }
}

TEST(BatchGeometry, NoWholeAccumulationNamesWhatWorks) {
  // 12 pairs, micro-batch 2, 4 ranks: 8 per micro-step does not divide 12.
  const std::string text = refusal(with_batch(2, 1), 4, 12);
  EXPECT_NE(text.find("the checkpoint's global batch of 12 pairs is not a multiple of train.micro_batch(2) x ranks(4)"),
            std::string::npos) << text;
  EXPECT_NE(text.find("rank counts that keep it with train.micro_batch = 2: 1, 2, 3, 6;"), std::string::npos) << text;
  EXPECT_NE(text.find("train.micro_batch values that keep it on 4 ranks: 1, 3"), std::string::npos) << text;
  // Context parallelism: a data-parallel rank is context_size ranks.
  const std::string split = refusal(with_batch(2, 1), 4, 12, 2);
  EXPECT_NE(split.find("x data-parallel ranks(4)"), std::string::npos) << split;
  EXPECT_NE(split.find("rank counts that keep it with train.micro_batch = 2: 2, 4, 6, 12;"), std::string::npos) << split;
  EXPECT_NE(split.find("values that keep it on 8 ranks: 1, 3"), std::string::npos) << split;
  // A micro-batch that divides no global batch of 12 with any rank count.
  EXPECT_NE(refusal(with_batch(5, 0), 1, 12).find("train.micro_batch = 5: none;"), std::string::npos);
}

TEST(BatchGeometry, StepInBackwardRefusesAResumeThatNeedsAccumulation) {
  TrainConfig config = with_batch(4, 1);
  config.optim.step_in_backward = true;
  EXPECT_EQ(resolve_batch_geometry(config, 4, 16).grad_accum, 1);
  const std::string text = refusal(config, 2, 16);
  EXPECT_NE(text.find("optim.step_in_backward = true needs train.grad_accum = 1, and the checkpoint's global batch of "
                      "16 pairs on 2 ranks takes 2 micro-steps"),
            std::string::npos) << text;
  EXPECT_NE(text.find("train.micro_batch values that keep it on 2 ranks: 1, 2, 4, 8"), std::string::npos) << text;
}

}  // namespace
}  // namespace st

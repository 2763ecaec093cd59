// Validation: value-carrying messages, every problem listed at once, origins named.
#include <gtest/gtest.h>

#include "config_test_helpers.h"
#include "thrown_message.h"
#include "train/objective.h"
#include "train/train_config_validate.h"
#include "util/errors.h"

namespace st {
namespace {

std::string validation_error_of(const TrainConfig& config, int world_size,
                                const ConfigOrigins& origins = {}) {
  try {
    validate_config(config, world_size, origins);
  } catch (const ConfigError& error) {
    return error.what();
  }
  ADD_FAILURE() << "no ConfigError was thrown";
  return "";
}

TEST(ConfigValidate, DefaultsAreValidOnAnyRankCount) {
  for (int ranks : {1, 2, 3, 16}) EXPECT_NO_THROW(validate_config(TrainConfig{}, ranks));
}

TEST(ConfigValidate, BatchGeometryMessageCarriesTheNumbers) {
  TrainConfig config;
  config.train.micro_batch = 4;
  config.train.grad_accum = 8;
  config.train.global_batch = 256;
  const std::string message =
      validation_error_of(config, 16, {{"train.global_batch", "run.ini:12"}});
  EXPECT_NE(message.find("train.micro_batch(4) x train.grad_accum(8) x ranks(16) = 512 != "
                         "train.global_batch(256) (run.ini:12)"),
            std::string::npos)
      << message;
  config.train.global_batch = 512;
  EXPECT_NO_THROW(validate_config(config, 16));
}

TEST(ConfigValidate, AnAutoGradAccumNeedsAWholeValue) {
  // grad_accum = 0 follows the rank count: 12 pairs = 1 x 3 x 4 ranks = 1 x 4 x 3 ranks; not 5.
  TrainConfig config;
  config.train.micro_batch = 1;
  config.train.grad_accum = 0;
  config.train.global_batch = 12;
  for (int ranks : {1, 2, 3, 4, 6, 12}) EXPECT_NO_THROW(validate_config(config, ranks)) << ranks;
  const std::string message = validation_error_of(config, 5, {{"train.global_batch", "run.ini:3"}});
  EXPECT_NE(message.find("train.global_batch(12) (run.ini:3) is not a multiple of train.micro_batch(1) x ranks(5)"),
            std::string::npos)
      << message;
}

TEST(ConfigValidate, UnknownRankCountLeavesRankRulesToTheRun) {
  TrainConfig config;
  config.train.micro_batch = 4;
  config.train.grad_accum = 8;
  config.train.global_batch = 256;
  config.dist.ranks_per_node = 8;
  EXPECT_NO_THROW(validate_config(config, 0));
  EXPECT_THROW(validate_config(config, 4), ConfigError);
  config.optim.lr = -1.0;
  EXPECT_NE(validation_error_of(config, 0).find("optim.lr = -1"), std::string::npos) << "other rules still apply";
}

// Enum keys hold only their table's words by type: a word outside it is refused while parsing,
// every such key at once, with where it was set.
TEST(ConfigValidate, EnumerationsListTheAllowedValues) {
  testing::TempIni file("[train]\nstage = ppo\n");
  try {
    testing::parse({"--config", file.path(), "--optim.schedule=cosin"});
    FAIL() << "no ConfigError was thrown";
  } catch (const ConfigError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("(2 problems)"), std::string::npos) << message;
    EXPECT_NE(message.find("optim.schedule = cosin (command line) is not one of "
                           "constant|linear|cosine|cosine_with_min_lr"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("train.stage = ppo (" + file.path() + ":2) is not one of dpo|sft"), std::string::npos)
        << message;
  }
  EXPECT_EQ(testing::parse({"--optim.schedule=linear"}).config.optim.schedule, LrSchedule::linear);
}

TEST(ConfigValidate, TextChoicesAreCheckedAgainstTheirList) {
  TrainConfig config;
  config.model.preset = "llama-9";
  const std::string message = validation_error_of(config, 1, {{"model.preset", "command line"}});
  EXPECT_NE(message.find("model.preset = llama-9 (command line) is not one of debug|"), std::string::npos) << message;
}

TEST(ConfigValidate, AllProblemsAreReportedTogether) {
  TrainConfig config;
  config.optim.lr = -1.0;
  config.optim.beta2 = 1.0;
  config.dist.timeout_s = 0.0;
  config.dpo.beta = 0.0;
  const std::string message = validation_error_of(config, 2);
  EXPECT_NE(message.find("(4 problems)"), std::string::npos) << message;
  EXPECT_NE(message.find("optim.lr = -1 (default) must be > 0"), std::string::npos) << message;
  EXPECT_NE(message.find("optim.beta2 = 1 (default) must be in [0, 1)"), std::string::npos);
  EXPECT_NE(message.find("dist.timeout_s = 0 (default) must be > 0 [s]"), std::string::npos);
  EXPECT_NE(message.find("dpo.beta = 0 (default) must be > 0"), std::string::npos);
}

TEST(ConfigValidate, AnAutoTokenBudgetNeedsPacking) {
  TrainConfig config;
  config.data.micro_batch_tokens = kAutoMicroBatchTokens;
  const std::string message = validation_error_of(config, 1);
  EXPECT_NE(message.find("data.micro_batch_tokens"), std::string::npos) << message;
  EXPECT_NE(message.find("set data.packing = true"), std::string::npos) << message;
  config.data.packing = true;
  EXPECT_NO_THROW(validate_config(config, 1));
  config.data.micro_batch_tokens = -2;
  EXPECT_NE(validation_error_of(config, 1).find("or -1 (auto)"), std::string::npos);
}

// KTO's reference point is each micro-batch's: one example is too few, and the refusal says why.
TEST(ConfigValidate, KtoNeedsTwoExamplesPerMicroBatch) {
  TrainConfig config;
  config.train.stage = Stage::kto;
  config.train.micro_batch = 1;
  const std::string message = st::testing::thrown_message<ConfigError>([&] { check_objective_config(config); });
  EXPECT_NE(message.find("train.micro_batch = 1 must be at least 2 for train.stage = kto (its reference point"),
            std::string::npos)
      << message;
  config.train.micro_batch = 2;
  EXPECT_NO_THROW(check_objective_config(config));
  config.train.stage = Stage::dpo;
  config.train.micro_batch = 1;
  EXPECT_NO_THROW(check_objective_config(config));
}

TEST(ConfigValidate, WarmupStepsAndRatioConflict) {
  TrainConfig config;
  config.optim.warmup_steps = 100;
  config.optim.warmup_ratio = 0.1;
  const std::string message = validation_error_of(config, 1);
  EXPECT_NE(message.find("conflicts with optim.warmup_steps = 100"), std::string::npos) << message;
}

TEST(ConfigValidate, DeclaredRanksPerNodeMustDivideTheJob) {
  TrainConfig config;
  config.dist.ranks_per_node = 4;
  EXPECT_NO_THROW(validate_config(config, 8));
  const std::string message = validation_error_of(config, 6);
  EXPECT_NE(message.find("dist.ranks_per_node = 4 (default) does not divide the 6 ranks"),
            std::string::npos)
      << message;
}

TEST(ConfigValidate, NllMeanIsRefusedWhereNoNllIsTrained) {
  TrainConfig config;
  config.dpo.nll_mean = NllMean::micro_batch_tokens;
  const std::string message = validation_error_of(config, 1);
  EXPECT_NE(message.find("dpo.nll_mean = micro_batch_tokens"), std::string::npos) << message;
  EXPECT_NE(message.find("dpo.ftx > 0 or dpo.loss = orpo"), std::string::npos) << message;
  config.dpo.ftx = 0.5;
  EXPECT_NO_THROW(validate_config(config, 1, {}));
  config.dpo.ftx = 0.0;
  config.dpo.loss = PreferenceLoss::orpo;
  config.dpo.reference = ReferenceChoice::automatic;
  EXPECT_NO_THROW(validate_config(config, 1, {}));
}

TEST(ConfigValidate, LabelSmoothingIsRefusedForEveryLossButSigmoid) {
  for (PreferenceLoss loss : {PreferenceLoss::ipo, PreferenceLoss::hinge, PreferenceLoss::simpo, PreferenceLoss::orpo}) {
    TrainConfig config;
    config.dpo.loss = loss;
    config.dpo.label_smoothing = 0.1;
    const std::string message = validation_error_of(config, 1);
    EXPECT_NE(message.find("dpo.label_smoothing = 0.1"), std::string::npos) << message;
    EXPECT_NE(message.find("applies to dpo.loss = sigmoid only (dpo.loss = " + std::string(enum_name(loss)) + ")"),
              std::string::npos)
        << message;
  }
  TrainConfig sigmoid;
  sigmoid.dpo.label_smoothing = 0.1;
  EXPECT_NO_THROW(validate_config(sigmoid, 1, {}));
}

TEST(ConfigValidate, ParsedOriginsFlowIntoMessages) {
  st::testing::TempIni ini("[data]\nval_size = 1.5\n");
  const auto parsed = st::testing::parse({"--config", ini.path()});
  const std::string message = validation_error_of(parsed.config, 1, parsed.origins);
  EXPECT_NE(message.find("data.val_size = 1.5 (" + ini.path() + ":2) must be in [0, 1)"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace st

namespace st {
namespace {

TEST(ConfigValidate, LoraKeysAreCheckedWithWhereTheyWereSet) {
  TrainConfig config;
  config.train.method = TrainMethod::lora;
  config.lora.r = 0;
  config.lora.alpha = -1.0;
  config.lora.dropout = 1.0;
  config.lora.target_modules = "q,qkv";
  const std::string message = validation_error_of(config, 2, {{"lora.target_modules", "run.ini:30"}});
  EXPECT_NE(message.find("lora.r = 0 (default) must be >= 1"), std::string::npos) << message;
  EXPECT_NE(message.find("lora.alpha = -1 (default) must be > 0"), std::string::npos) << message;
  EXPECT_NE(message.find("lora.dropout = 1 (default) must be in [0, 1)"), std::string::npos) << message;
  EXPECT_NE(message.find("'qkv' is not one of q|k|v|o|gate|up|down|in_proj_qkv|in_proj_z|in_proj_b|in_proj_a|out|shared_expert_gate (comma-separated) (run.ini:30)"), std::string::npos)
      << message;
}

TEST(ConfigValidate, ContextParallelCountsDataParallelRanksAndRefusesWhatItCannotSplit) {
  TrainConfig config;
  config.train.micro_batch = 1;
  config.train.grad_accum = 8;
  config.train.global_batch = 32;
  config.dist.context_parallel = 4;
  EXPECT_NO_THROW(validate_config(config, 16));  // 1 x 8 x 4 data-parallel groups
  std::string message = validation_error_of(config, 8, {{"train.global_batch", "run.ini:4"}});
  EXPECT_NE(message.find("train.micro_batch(1) x train.grad_accum(8) x data-parallel ranks(2) = 16 != "
                         "train.global_batch(32) (run.ini:4)"),
            std::string::npos)
      << message;
  message = validation_error_of(config, 6, {{"dist.context_parallel", "run.ini:9"}});
  EXPECT_NE(message.find("dist.context_parallel = 4 (run.ini:9) does not divide the 6 ranks of this job"),
            std::string::npos)
      << message;
  config.dist.sharding = Sharding::hybrid;
  config.model.attention = AttentionPath::masked;
  config.eval.tasks = "tasks/arc.jsonl";
  message = validation_error_of(config, 16);
  for (const char* part : {"dist.sharding = hybrid", "must be full or grad_op with dist.context_parallel = 4",
                           "model.attention = masked", "must be varlen with dist.context_parallel = 4",
                           "eval.tasks = tasks/arc.jsonl", "must be empty with dist.context_parallel = 4"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
  }
  config.dist.sharding = Sharding::grad_op;
  config.model.attention = AttentionPath::varlen;
  config.eval.tasks.clear();
  EXPECT_NO_THROW(validate_config(config, 16));
  config.dist.context_parallel = 0;
  EXPECT_NE(validation_error_of(config, 16).find("dist.context_parallel"), std::string::npos);
}

}  // namespace
}  // namespace st

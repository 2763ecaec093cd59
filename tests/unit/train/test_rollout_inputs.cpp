// What the GRPO rollout phase is made of besides the model: the replay file (its rows and every
// way it can be wrong, named), the reward set a config names, and TRL's generation geometry.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "train/replay_completions.h"
#include "train/grpo_options.h"
#include "train/reward_set.h"
#include "train/rloo_options.h"
#include "train/rollout_geometry.h"
#include "util/errors.h"

namespace st {
namespace {

std::string replay_file(const std::string& text) {
  static int count = 0;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("replay_" + std::to_string(::getpid()) + "_" + std::to_string(count++) + ".jsonl")).string();
  std::ofstream(path) << text;
  return path;
}

// The DataError `read` throws, as text ("" when it throws none).
template <typename Read>
std::string data_error(Read read) {
  try {
    read();
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

// The rollout settings of a replay of `path`, groups of 2, in `section`'s keys.
RolloutOptions replay_of(const std::string& path, const char* section = "grpo") {
  RolloutOptions options(section, 2, 256);
  options.rollouts = path;
  return options;
}

TEST(ReplayCompletions, RowIIsLineIAsGiven) {
  const std::string path =
      replay_file("{\"completion_ids\": [[5, 6], [7]]}\n\n{\"completion_ids\": [[8, 9, 2], [3]], \"extra\": 1}\n");
  ReplayCompletions replay(replay_of(path), 10);
  EXPECT_EQ(replay.rows(), 2u) << "blank lines are no rows";
  EXPECT_EQ(replay.group(1), (std::vector<std::vector<int64_t>>{{8, 9, 2}, {3}})) << "used as given: EOS kept";
  EXPECT_EQ(replay.group(0), (std::vector<std::vector<int64_t>>{{5, 6}, {7}})) << "rows in any order";
}

TEST(ReplayCompletions, EveryFaultNamesTheFileTheLineAndTheFix) {
  const std::string path = replay_file(
      "{\"completion_ids\": [[5], [6], [7]]}\n"  // 3 completions for a group of 2
      "{\"completion_ids\": [[5], [12]]}\n"      // an id past the vocabulary
      "not json\n"
      "{\"ids\": [[5], [6]]}\n"
      "{\"completion_ids\": [[5], []]}\n");
  ReplayCompletions replay(replay_of(path), 10);
  EXPECT_NE(data_error([&] { replay.group(0); }).find(path + ": line 1: completion_ids holds 3 completions"),
            std::string::npos);
  EXPECT_NE(data_error([&] { replay.group(0); }).find("grpo.num_generations = 2"), std::string::npos);
  EXPECT_NE(data_error([&] { replay.group(1); }).find("line 2: completion 1 holds 12, not a token id"), std::string::npos);
  EXPECT_NE(data_error([&] { replay.group(2); }).find("line 3: not JSON"), std::string::npos);
  EXPECT_NE(data_error([&] { replay.group(3); }).find("line 4: no completion_ids list"), std::string::npos);
  EXPECT_NE(data_error([&] { replay.group(4); }).find("line 5: completion 1 is not a non-empty list"), std::string::npos);
  EXPECT_NE(data_error([&] { replay.group(5); }).find("no line for dataset row 5 (the file has 5 lines)"),
            std::string::npos);
  EXPECT_NE(data_error([] { ReplayCompletions(replay_of("/nonexistent/replay.jsonl"), 10); })
                .find("/nonexistent/replay.jsonl: cannot read the replay file (grpo.rollouts)"),
            std::string::npos);
  EXPECT_NE(data_error([] { ReplayCompletions(replay_of("/nonexistent/replay.jsonl", "rloo"), 10); })
                .find("(rloo.rollouts)"),
            std::string::npos) << "named by the objective's section";
}

TEST(RewardSet, NamesWeightsAndWhatItReads) {
  RolloutOptions options = GrpoOptions().rollout;
  options.reward_funcs = "get_soft_overlong_punishment , math_answer";
  RewardSet set = reward_set(options);
  ASSERT_EQ(set.functions.size(), 2u);
  EXPECT_EQ(set.functions[0]->name(), "soft_overlong_punishment_reward") << "TRL's __name__, its metric key";
  EXPECT_EQ(set.weights, (std::vector<double>{1.0, 1.0})) << "TRL's default: 1 each";
  EXPECT_TRUE(set.reads_text) << "math_answer reads the decoded completion";
  options.reward_funcs = "get_soft_overlong_punishment";
  options.reward_weights = "0.5";
  set = reward_set(options);
  EXPECT_EQ(set.weights, (std::vector<double>{0.5}));
  EXPECT_FALSE(set.reads_text) << "the overlong punishment reads ids only";

  RewardBatch batch;
  batch.completions = {"a", "b"};
  batch.completion_ids = {{1, 2, 3}, std::vector<int64_t>(1300, 4)};
  const RewardTable table = score_batch(set, batch);
  EXPECT_EQ(table.values, (std::vector<double>{0.0, -1.0})) << "1300 tokens past TRL's registry limit of 1280";
}

TEST(RewardSet, RefusesWhatItCannotScoreByItsKey) {
  const auto message = [](const std::string& funcs, const std::string& weights, RolloutOptions options = GrpoOptions().rollout) {
    options.reward_funcs = funcs;
    options.reward_weights = weights;
    try {
      reward_set(options);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message("accuracy_reward", "").find("grpo.reward_funcs: no reward function 'accuracy_reward'; the rule "
                                               "rewards are think_format_reward|get_soft_overlong_punishment|math_answer"),
            std::string::npos);
  EXPECT_NE(message("", "").find("grpo.reward_funcs is empty"), std::string::npos);
  EXPECT_NE(message("math_answer", "1, 2").find("grpo.reward_weights lists 2 weights for 1 reward functions"),
            std::string::npos);
  EXPECT_NE(message("math_answer", "x").find("grpo.reward_weights: 'x' is not a number"), std::string::npos);
  EXPECT_NE(message("math_answer", "x", RlooOptions().rollout).find("rloo.reward_weights: 'x' is not a number"),
            std::string::npos) << "named by the objective's section";
}

TEST(RolloutGeometry, TrlsLayoutOnNProcesses) {
  RolloutOptions config = GrpoOptions().rollout;
  config.num_generations = 2;
  // TRL's figure in _get_train_sampler: 2 GPUs x 3 completions x steps_per_generation 4, GA 2.
  config.steps_per_generation = 4;
  RolloutGeometry g = rollout_geometry(config, 3, 2, 2, 1);
  EXPECT_EQ(g.rank_block(), 12);
  EXPECT_EQ(g.completions(), 24);
  EXPECT_EQ(g.prompts(), 12) << "prompts 0 to 11 for the first 4 micro-batches";
  EXPECT_EQ(g.generate_every(), 4);
  EXPECT_TRUE(g.needs_old_logps()) << "a generation spans 2 optimizer steps";
  EXPECT_EQ(rollout_steps_per_epoch(g, 30), 4) << "2 whole generations of 12 prompts (6 dropped), 2 steps each";
  config.steps_per_generation = 0;  // TRL's default: grad_accum
  g = rollout_geometry(config, 3, 2, 2, 0);
  EXPECT_EQ(g.steps_per_generation, 2);
  EXPECT_FALSE(g.needs_old_logps()) << "one generation per step: on-policy, no old log-probs";
  config.num_iterations = 2;
  EXPECT_TRUE(rollout_geometry(config, 3, 2, 2, 0).needs_old_logps()) << "a generation trained twice";
  config.num_generations = 5;
  try {
    rollout_geometry(config, 3, 2, 2, 0);
    FAIL() << "12 completions are no whole groups of 5";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("= 12 completions, not a multiple of grpo.num_generations = 5"),
              std::string::npos);
  }
  RolloutOptions rloo = RlooOptions().rollout;
  EXPECT_EQ(rloo.num_generations, 2) << "RLOOConfig's default";
  EXPECT_EQ(rloo.max_completion_length, 512) << "RLOOConfig's default";
  rloo.num_generations = 5;
  EXPECT_THROW(rollout_geometry(rloo, 3, 2, 2, 0), ConfigError);
}

TEST(RlooOptions, RewardClipRangeIsTwoOrderedBounds) {
  RlooOptions options;
  EXPECT_FALSE(reward_clip_bounds(options).has_value()) << "empty: no clipping (TRL's None)";
  options.reward_clip_range = " -0.5 , 1 ";
  EXPECT_EQ(reward_clip_bounds(options), std::make_optional(std::make_pair(-0.5, 1.0)));
  for (const char* bad : {"1", "1, 0", "a, 1", "0, 1, 2", "0,", ",0, 1", "nan, 1", "1x, 2"}) {
    options.reward_clip_range = bad;
    try {
      reward_clip_bounds(options);
      FAIL() << "'" << bad << "' was taken";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("rloo.reward_clip_range = '" + std::string(bad) + "'"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace st

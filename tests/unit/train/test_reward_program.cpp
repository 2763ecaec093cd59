// The user's reward program (reward.command): the line it reads is what TRL hands a reward
// function, its answers become rewards (null: none), and every way it can fail stops with the
// program named; the child process under it answers line by line and never outlives a timeout.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "train/grpo_options.h"
#include "train/reward_program.h"
#include "train/reward_set.h"
#include "util/errors.h"
#include "util/line_process.h"

namespace st {
namespace {

RewardBatch two_completions(nlohmann::json prompt) {
  RewardBatch batch;
  batch.prompts = {"p", "p"};
  batch.prompt_values = nlohmann::json::array({prompt, prompt});
  batch.completions = {"first", "second"};
  batch.decoded = true;
  batch.completion_ids = {{5, 6, 2}, {7}};
  batch.columns["solution"] = nlohmann::json::array({"1/2", "1/2"});
  batch.rows = {11, 11};
  return batch;
}

RewardOptions program(const std::string& command, double timeout_s = 20.0) {
  RewardOptions options;
  options.command = command;
  options.timeout_s = timeout_s;
  return options;
}

std::string reward_error(const RewardProgram& function, const RewardBatch& batch) {
  try {
    function.rewards(batch);
  } catch (const RewardError& e) {
    return e.what();
  }
  return "";
}

TEST(RewardProgram, ReadsWhatTrlHandsARewardFunction) {
  const nlohmann::json text = RewardProgram::request(two_completions("What is 1/2?"));
  EXPECT_EQ(text["prompts"], nlohmann::json::array({"What is 1/2?", "What is 1/2?"}));
  EXPECT_EQ(text["completions"], nlohmann::json::array({"first", "second"}));
  EXPECT_EQ(text["completion_ids"], nlohmann::json::parse("[[5, 6, 2], [7]]")) << "as sampled, EOS included";
  EXPECT_EQ(text["solution"], nlohmann::json::array({"1/2", "1/2"})) << "every other column, one value per completion";

  const nlohmann::json messages = nlohmann::json::parse(R"([{"role": "user", "content": "What is 1/2?"}])");
  const nlohmann::json chat = RewardProgram::request(two_completions(messages));
  EXPECT_EQ(chat["prompts"][1], messages) << "messages as the dataset holds them";
  EXPECT_EQ(chat["completions"][0], nlohmann::json::parse(R"([{"role": "assistant", "content": "first"}])"));

  RewardBatch undecoded = two_completions("p");
  undecoded.decoded = false;
  EXPECT_FALSE(RewardProgram::request(undecoded).contains("completions")) << "no tokenizer: no text, not empty text";
}

TEST(RewardProgram, AnswersBecomeRewardsAndNullIsNone) {
  // A program that answers each line with the count of its completions' ids, the second null.
  const RewardProgram function(program(
      "python3 -c 'import json,sys\n"
      "for l in sys.stdin: b = json.loads(l); print(json.dumps({\"rewards\": [len(b[\"completion_ids\"][0]), None]}), "
      "flush=True)'"));
  for (int generation = 0; generation < 3; ++generation) {  // started once, asked per generation
    const std::vector<double> rewards = function.rewards(two_completions("p"));
    ASSERT_EQ(rewards.size(), 2u);
    EXPECT_EQ(rewards[0], 3.0);
    EXPECT_TRUE(std::isnan(rewards[1]));
  }
  EXPECT_EQ(function.name(), "reward_program");
}

TEST(RewardProgram, EveryFailureNamesTheProgramAndTheFix) {
  const RewardBatch batch = two_completions("p");
  EXPECT_NE(reward_error(RewardProgram(program("while read l; do echo '{\"rewards\": [1]}'; done")), batch)
                .find("answered 1 rewards for 2 completions: one per completion, in order"),
            std::string::npos);
  EXPECT_NE(reward_error(RewardProgram(program("while read l; do echo '{\"rewards\": [1, \"x\"]}'; done")), batch)
                .find("answered \"x\" for completion 1 of this rank's 2 (dataset row 11): each reward is a finite "
                      "number or null"),
            std::string::npos);
  EXPECT_NE(reward_error(RewardProgram(program("while read l; do echo 0.5; done")), batch)
                .find("answered '0.5': the answer is one line {\"rewards\": [number or null, ...]}"),
            std::string::npos);
  const std::string exited = reward_error(RewardProgram(program("read l; exit 4")), batch);
  EXPECT_NE(exited.find("reward.command: `read l; exit 4` closed its output before answering (it exited with status 4)"),
            std::string::npos)
      << exited;
  const auto start = std::chrono::steady_clock::now();
  const std::string slow = reward_error(RewardProgram(program("sleep 30; echo never", 0.5)), batch);
  EXPECT_NE(slow.find("gave no answer line within"), std::string::npos) << slow;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0)
      << "the program (and the sleep its shell started) is killed at the timeout";
}

TEST(RewardProgram, IsWeightedAfterTheRules) {
  RolloutOptions grpo = GrpoOptions().rollout;
  grpo.reward_funcs = "get_soft_overlong_punishment";
  grpo.reward_weights = "1.0, 0.25";
  const RewardSet set = reward_set(grpo, program("cat"));
  ASSERT_EQ(set.functions.size(), 2u);
  EXPECT_EQ(set.functions[1]->name(), "reward_program");
  EXPECT_EQ(set.weights, (std::vector<double>{1.0, 0.25}));
  grpo.reward_funcs = "";
  grpo.reward_weights = "";
  EXPECT_EQ(reward_set(grpo, program("cat")).functions.size(), 1u) << "the program alone is a reward set";
}

TEST(LineProcess, AnswersLineByLineAcrossPartialWrites) {
  LineProcess echo("while read l; do printf '%s' \"$l\"; sleep 0.05; printf '!\\n'; done");
  EXPECT_EQ(echo.ask("one", 10.0), "one!");
  EXPECT_EQ(echo.ask("two", 10.0), "two!");
}

}  // namespace
}  // namespace st

namespace st {
namespace {

// Slurm signals every process of a job step (scancel --signal=USR1, TERM): the program must live
// on through them while its rank saves. Here the program signals itself, in the shell and in
// Python, and still answers.
TEST(LineProcess, OutlivesTheJobsStopSignals) {
  LineProcess shell("kill -USR1 $$; kill -TERM $$; while read l; do echo \"$l\"; done");
  EXPECT_EQ(shell.ask("shell", 10.0), "shell");
  LineProcess python(
      "python3 -c 'import os, signal, sys\n"
      "for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM, signal.SIGINT): os.kill(os.getpid(), s)\n"
      "for l in sys.stdin: print(l.strip(), flush=True)'");
  EXPECT_EQ(python.ask("python", 10.0), "python");
}

}  // namespace
}  // namespace st

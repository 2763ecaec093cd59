// The rule rewards (train/reward_functions.h) on TRL's own documented examples and the edges of
// their rules, and math_answer's extraction and comparison (train/math_answer.h).
#include <gtest/gtest.h>

#include <cmath>

#include "train/math_answer.h"
#include "train/reward_functions.h"
#include "util/errors.h"

namespace st {
namespace {

RewardBatch texts(std::vector<std::string> completions) {
  RewardBatch batch;
  batch.completions = std::move(completions);
  batch.prompts.assign(batch.completions.size(), "p");
  batch.completion_ids.assign(batch.completions.size(), {1});
  return batch;
}

TEST(ThinkFormatReward, TrlsDocumentedExamples) {
  // trl.rewards.think_format_reward's docstring: [1.0, 0.0].
  EXPECT_TRUE(think_format_matches("<think>\nThis is my reasoning.\n</think>\nThis is my answer."));
  EXPECT_FALSE(think_format_matches("<think>\nThis is my reasoning.\nThis is my answer."));
}

TEST(ThinkFormatReward, OneOpeningTagAtTheStartAndAClosingOneAfterIt) {
  EXPECT_TRUE(think_format_matches("<think></think>"));
  EXPECT_FALSE(think_format_matches(" <think>x</think>")) << "re.match anchors at the first character";
  EXPECT_FALSE(think_format_matches("<think>a<think>b</think>")) << "a second <think> anywhere fails";
  EXPECT_FALSE(think_format_matches("<think>a</think>b<think>")) << "even after the closing tag";
  EXPECT_TRUE(think_format_matches("<think>a\n\nb</think>\n\nline\n")) << "DOTALL: reasoning spans lines";
  EXPECT_FALSE(think_format_matches("</think><think>"));
}

TEST(ThinkFormatReward, APrefilledOpeningTagCountsAsWritten) {
  // Qwen3's template in thinking mode ends the prompt with "<think>\n": the completion starts inside.
  const RewardBatch batch = texts({"reasoning</think>answer", "<think>again</think>"});
  RuleRewardOptions options;
  EXPECT_EQ(rule_reward(RuleReward::think_format_reward, options)->rewards(batch), (std::vector<double>{0.0, 1.0}));
  options.think_prefilled = true;  // the second then holds two opening tags
  EXPECT_EQ(rule_reward(RuleReward::think_format_reward, options)->rewards(batch), (std::vector<double>{1.0, 0.0}));
}

TEST(SoftOverlongPunishment, ZeroThenARampThenMinusOne) {
  // DAPO Eq. 13 with L_max 20, L_cache 5.
  EXPECT_EQ(soft_overlong_punishment(15, 20, 5), 0.0);
  EXPECT_DOUBLE_EQ(soft_overlong_punishment(16, 20, 5), -0.2);
  EXPECT_DOUBLE_EQ(soft_overlong_punishment(20, 20, 5), -1.0);
  EXPECT_EQ(soft_overlong_punishment(21, 20, 5), -1.0);
  RewardBatch batch = texts({"a", "b"});
  batch.completion_ids = {std::vector<int64_t>(1100, 3), std::vector<int64_t>(1280, 3)};
  const auto rule = rule_reward(RuleReward::get_soft_overlong_punishment, {});
  EXPECT_EQ(rule->name(), "soft_overlong_punishment_reward") << "the name TRL logs it under";
  const std::vector<double> r = rule->rewards(batch);
  EXPECT_DOUBLE_EQ(r[0], (1024.0 - 1100.0) / 256.0) << "TRL's registry values: 1280 and 256";
  EXPECT_DOUBLE_EQ(r[1], -1.0);
}

TEST(MathAnswer, TheLastMarkedAnswerIsTaken) {
  EXPECT_EQ(final_answer("so \\boxed{3} or rather \\boxed{\\frac{1}{2}}."), "\\frac{1}{2}");
  EXPECT_EQ(final_answer("steps\n#### 1,234\n"), "1,234");
  EXPECT_EQ(final_answer("Answer: 42 apples"), "42 apples");
  EXPECT_EQ(final_answer("no answer here"), std::nullopt);
  EXPECT_EQ(final_answer("\\boxed{x^{2}+1}"), "x^{2}+1") << "nested braces";
}

TEST(MathAnswer, EqualAsRationalsElseAsNormalisedText) {
  EXPECT_EQ(math_answer_reward("\\boxed{0.5}", "\\frac{1}{2}"), 1.0);
  EXPECT_EQ(math_answer_reward("\\boxed{\\dfrac{2}{4}}", "1/2"), 1.0);
  EXPECT_EQ(math_answer_reward("#### 1,234", "The answer is\n#### 1234"), 1.0) << "GSM8K's marker on both sides";
  EXPECT_EQ(math_answer_reward("\\boxed{-3}", "-3.0"), 1.0);
  EXPECT_EQ(math_answer_reward("\\boxed{12\\text{ cm}}", "12"), 1.0) << "units dropped";
  EXPECT_EQ(math_answer_reward("\\boxed{$7$.}", "7"), 1.0);
  EXPECT_EQ(math_answer_reward("\\boxed{x^2 + 1}", "x^2+1"), 1.0) << "text compared without spaces";
  EXPECT_EQ(math_answer_reward("\\boxed{3}", "4"), 0.0);
  EXPECT_EQ(math_answer_reward("\\boxed{1/3}", "0.333"), 0.0) << "exact rationals, not rounded ones";
  EXPECT_EQ(math_answer_reward("I think it is 4", "4"), 0.0) << "no marked answer: no reward";
  EXPECT_EQ(math_answer_reward("\\boxed{}", ""), 0.0) << "an empty answer is none";
}

TEST(MathAnswer, ReadsItsReferenceColumnAndSaysWhenItIsMissing) {
  RewardBatch batch = texts({"\\boxed{2}", "\\boxed{3}", "\\boxed{5}"});
  batch.columns["solution"] = {"2", "4", nullptr};
  const auto rule = rule_reward(RuleReward::math_answer, {});
  const std::vector<double> r = rule->rewards(batch);
  EXPECT_EQ(r[0], 1.0);
  EXPECT_EQ(r[1], 0.0);
  EXPECT_TRUE(std::isnan(r[2])) << "no reference: no reward, as TRL's None";
  RuleRewardOptions other;
  other.answer_column = "answer";
  try {
    rule_reward(RuleReward::math_answer, other)->rewards(batch);
    FAIL() << "a missing column must stop the step";
  } catch (const RewardError& e) {
    EXPECT_NE(std::string(e.what()).find("'answer'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("grpo.answer_column"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace st

// The harness's per-document pieces: characters and words as Python counts them (values from
// CPython: len(str), len(re.split(r"\s+", s))), the regex answer filter, exact match's
// normalisation, argmax ties, the task aggregates with their standard errors, and the
// rolling windows that score every token once with the harness's contexts.
#include <gtest/gtest.h>

#include <cmath>

#include "eval/eval_metrics.h"
#include "eval/eval_requests.h"

namespace st {
namespace {

TEST(EvalText, CharactersAndWordsAsPythonCounts) {
  EXPECT_EQ(count_characters("caf\xC3\xA9"), 4);               // "café": 5 bytes
  EXPECT_EQ(count_characters("\xF0\x9F\x99\x82 ok"), 4);       // an emoji is one character
  EXPECT_EQ(count_words(" a\tb\xE3\x80\x80" "c\n"), 5);        // U+3000 is whitespace to Python
  EXPECT_EQ(count_words("one"), 1);
  EXPECT_EQ(count_words(""), 1);
  EXPECT_EQ(strip_whitespace("  42\xC2\xA0\n"), "42");         // U+00A0 stripped too
}

TEST(EvalText, AnswerFilterTakesTheSelectedMatch) {
  AnswerFilter gsm8k{"#### (\\-?[0-9\\.\\,]+)", 0, "[invalid]"};
  EXPECT_EQ(filter_answer("so 3 + 4 = 7\n#### 7", gsm8k), "7");
  EXPECT_EQ(filter_answer("no answer", gsm8k), "[invalid]");
  AnswerFilter last{"(-?[$0-9.,]{2,})|(-?[0-9]+)", -1, "[invalid]"};  // the flexible one: first non-empty group
  EXPECT_EQ(filter_answer("it is 12 or maybe 5", last), "5");
  EXPECT_EQ(filter_answer("it is 12 or maybe 5", {"(-?[$0-9.,]{2,})|(-?[0-9]+)", 0, "x"}), "12");
  EXPECT_EQ(filter_answer("abc", {"[0-9]", 3, "none"}), "none");  // past the matches: the fallback
  EXPECT_EQ(filter_answer("  whole  ", {}), "  whole  ");          // no regex: untouched
}

TEST(EvalText, ExactMatchNormalises) {
  ExactMatchOptions options;
  EXPECT_TRUE(exact_match("1,000", "1,000", options));
  EXPECT_FALSE(exact_match("1,000", "1000", options));
  options.regexes_to_ignore = {",", "\\$", "[\\s\\S]*#### "};
  options.ignore_case = true;
  EXPECT_TRUE(exact_match("$1,000", "Work: 2 * 500\n#### 1000", options));
  options.ignore_punctuation = true;
  EXPECT_TRUE(exact_match("Paris!", "paris", options));
}

TEST(EvalMetrics, MeansWithSampleStandardErrors) {
  std::vector<nlohmann::json> samples;
  for (double acc : {1.0, 0.0, 1.0, 1.0}) samples.push_back({{"acc", acc}, {"acc_norm", 1.0 - acc}, {"acc_bytes", acc}});
  const auto metrics = aggregate_metrics(TaskKind::multiple_choice, samples);
  EXPECT_DOUBLE_EQ(metrics.at("acc").value, 0.75);
  EXPECT_NEAR(*metrics.at("acc").stderr_value, std::sqrt(0.25 * 0.75 * 4 / 3) / 2, 1e-15);
  EXPECT_DOUBLE_EQ(metrics.at("acc_norm").value, 0.25);
  const auto one = aggregate_metrics(TaskKind::generate_until, {{{"exact_match", 1.0}}});
  EXPECT_FALSE(one.at("exact_match").stderr_value.has_value());  // none below two samples
}

TEST(EvalMetrics, PerplexitiesAreCorpusLevel) {
  const std::vector<nlohmann::json> samples = {{{"loglikelihood", -10.0}, {"words", 3}, {"bytes", 12}, {"tokens", 5}},
                                               {{"loglikelihood", -20.0}, {"words", 7}, {"bytes", 18}, {"tokens", 10}}};
  const auto metrics = aggregate_metrics(TaskKind::loglikelihood_rolling, samples);
  EXPECT_NEAR(metrics.at("word_perplexity").value, std::exp(30.0 / 10), 1e-9);
  EXPECT_NEAR(metrics.at("byte_perplexity").value, std::exp(30.0 / 30), 1e-12);
  EXPECT_NEAR(metrics.at("bits_per_byte").value, 1.0 / std::log(2.0), 1e-12);
  EXPECT_NEAR(metrics.at("token_perplexity").value, std::exp(30.0 / 15), 1e-12);
  EXPECT_FALSE(metrics.at("bits_per_byte").stderr_value.has_value());
}

TEST(EvalMetrics, ArgmaxTakesTheFirstOfTies) {
  EXPECT_EQ(first_argmax({-3.0, -1.0, -1.0, -2.0}), 1u);
  EXPECT_EQ(first_argmax({-1.0}), 0u);
}

TEST(EvalRequests, RollingWindowsScoreEveryTokenOnceWithTheHarnessContexts) {
  std::vector<int64_t> tokens;
  for (int64_t t = 1; t <= 10; ++t) tokens.push_back(t);
  const auto windows = rolling_windows(tokens, 99, 4);
  ASSERT_EQ(windows.size(), 3u);
  EXPECT_EQ(windows[0].prompt_ids, (std::vector<int64_t>{99}));
  EXPECT_EQ(windows[0].completion_ids, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(windows[1].prompt_ids, (std::vector<int64_t>{4}));
  EXPECT_EQ(windows[1].completion_ids, (std::vector<int64_t>{5, 6, 7, 8}));
  EXPECT_EQ(windows[2].prompt_ids, (std::vector<int64_t>{6, 7, 8}));  // fills the input to 4 tokens
  EXPECT_EQ(windows[2].completion_ids, (std::vector<int64_t>{9, 10}));
  EXPECT_EQ(rolling_windows({7}, 99, 4).size(), 1u);
  EXPECT_TRUE(rolling_windows({}, 99, 4).empty());
}

}  // namespace
}  // namespace st

// The harness's metrics: per document (acc, acc_norm by the choice's characters - Python's
// len(str) -, acc_bytes by its UTF-8 bytes, exact_match after the answer filter), then per task
// the mean and its standard error (sample standard deviation / sqrt(n); none below 2 samples),
// and for perplexity tasks corpus-level word / byte / token perplexity and bits per byte
// (reported without a standard error, as the harness does).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "eval/eval_task.h"

namespace st {

int64_t count_characters(const std::string& utf8);   // Unicode code points
int64_t count_words(const std::string& utf8);        // len(re.split(r"\s+", text))
std::string strip_whitespace(const std::string& utf8);

// The answer the filter takes from a model's output.
std::string filter_answer(const std::string& output, const AnswerFilter& filter);
bool exact_match(const std::string& prediction, const std::string& reference, const ExactMatchOptions& options);

struct MetricValue {
  double value = 0.0;
  std::optional<double> stderr_value;
};

// The task's metrics from its documents' sample records (eval_runner.h writes them), in the
// order documents appear (any order gives the same values but for float summation).
std::map<std::string, MetricValue> aggregate_metrics(TaskKind kind, const std::vector<nlohmann::json>& samples);

// Index of the largest value, the first on ties (numpy.argmax).
size_t first_argmax(const std::vector<double>& values);

}  // namespace st

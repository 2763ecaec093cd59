#include "eval/eval_metrics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>

namespace st {
namespace {

// Decodes the code point at `i` (valid UTF-8 from a JSON parser) and advances `i`.
uint32_t next_code_point(const std::string& text, size_t& i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  const int length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  uint32_t value = length == 1 ? lead : lead & (0x7F >> length);
  for (int k = 1; k < length && i + k < text.size(); ++k) value = (value << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
  i += static_cast<size_t>(length);
  return value;
}

// Python's str.isspace(), which re's \s follows for text.
bool is_python_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

MetricValue mean_with_stderr(const std::vector<double>& values) {
  MetricValue metric;
  if (values.empty()) return metric;
  double sum = 0;
  for (double v : values) sum += v;
  const auto n = static_cast<double>(values.size());
  metric.value = sum / n;
  if (values.size() > 1) {
    double squares = 0;
    for (double v : values) squares += (v - metric.value) * (v - metric.value);
    metric.stderr_value = std::sqrt(squares / (n - 1)) / std::sqrt(n);
  }
  return metric;
}

std::vector<double> column(const std::vector<nlohmann::json>& samples, const char* field) {
  std::vector<double> values;
  for (const nlohmann::json& sample : samples) values.push_back(sample.at(field).get<double>());
  return values;
}

}  // namespace

int64_t count_characters(const std::string& utf8) {
  int64_t count = 0;
  for (unsigned char byte : utf8) count += (byte & 0xC0) != 0x80;
  return count;
}

int64_t count_words(const std::string& utf8) {
  int64_t runs = 0;
  bool in_space = false;
  for (size_t i = 0; i < utf8.size();) {
    const bool space = is_python_space(next_code_point(utf8, i));
    runs += space && !in_space;
    in_space = space;
  }
  return runs + 1;
}

std::string strip_whitespace(const std::string& utf8) {
  size_t begin = utf8.size(), end = 0;
  for (size_t i = 0; i < utf8.size();) {
    const size_t start = i;
    if (!is_python_space(next_code_point(utf8, i))) {
      begin = std::min(begin, start);
      end = i;
    }
  }
  return begin >= end ? "" : utf8.substr(begin, end - begin);
}

std::string filter_answer(const std::string& output, const AnswerFilter& filter) {
  if (filter.regex.empty()) return output;
  const std::regex pattern(filter.regex, std::regex::ECMAScript);
  std::vector<std::string> found;
  for (auto it = std::sregex_iterator(output.begin(), output.end(), pattern); it != std::sregex_iterator(); ++it) {
    const std::smatch& match = *it;
    if (pattern.mark_count() == 0) {
      found.push_back(match.str(0));
    } else if (pattern.mark_count() == 1) {
      found.push_back(match.str(1));
    } else {
      std::string first;
      for (size_t g = 1; g < match.size() && first.empty(); ++g) first = match.str(g);
      found.push_back(first.empty() ? filter.fallback : first);
    }
  }
  const auto count = static_cast<int64_t>(found.size());
  const int64_t index = filter.group_select < 0 ? count + filter.group_select : filter.group_select;
  if (found.empty() || index < 0 || index >= count) return filter.fallback;
  return strip_whitespace(found[static_cast<size_t>(index)]);
}

bool exact_match(const std::string& prediction, const std::string& reference, const ExactMatchOptions& options) {
  auto normalise = [&](std::string text) {
    for (const std::string& ignore : options.regexes_to_ignore) {
      text = std::regex_replace(text, std::regex(ignore, std::regex::ECMAScript), "");
    }
    if (options.ignore_case) {
      for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (options.ignore_punctuation) {
      std::string kept;
      for (char c : text) {
        if (!std::ispunct(static_cast<unsigned char>(c))) kept += c;
      }
      text = kept;
    }
    return text;
  };
  return normalise(prediction) == normalise(reference);
}

size_t first_argmax(const std::vector<double>& values) {
  size_t best = 0;
  for (size_t i = 1; i < values.size(); ++i) {
    if (values[i] > values[best]) best = i;
  }
  return best;
}

std::map<std::string, MetricValue> aggregate_metrics(TaskKind kind, const std::vector<nlohmann::json>& samples) {
  std::map<std::string, MetricValue> metrics;
  switch (kind) {
    case TaskKind::multiple_choice:
      for (const char* name : {"acc", "acc_norm", "acc_bytes"}) metrics[name] = mean_with_stderr(column(samples, name));
      break;
    case TaskKind::generate_until:
      metrics["exact_match"] = mean_with_stderr(column(samples, "exact_match"));
      break;
    case TaskKind::loglikelihood_rolling: {
      double logp = 0, words = 0, bytes = 0, tokens = 0;
      for (const nlohmann::json& sample : samples) {
        logp += sample.at("loglikelihood").get<double>();
        words += sample.at("words").get<double>();
        bytes += sample.at("bytes").get<double>();
        tokens += sample.at("tokens").get<double>();
      }
      metrics["word_perplexity"].value = std::exp(-logp / words);
      metrics["byte_perplexity"].value = std::exp(-logp / bytes);
      metrics["bits_per_byte"].value = -logp / bytes / std::log(2.0);
      metrics["token_perplexity"].value = std::exp(-logp / tokens);
      break;
    }
  }
  return metrics;
}

}  // namespace st

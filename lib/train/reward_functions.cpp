#include "train/reward_functions.h"

#include <limits>

#include "train/math_answer.h"
#include "util/errors.h"
#include "util/text.h"

namespace st {
namespace {

constexpr const char* kThinkOpen = "<think>";
constexpr const char* kThinkClose = "</think>";

class ThinkFormat : public RewardFunction {
 public:
  explicit ThinkFormat(bool prefilled) : prefilled_(prefilled) {}
  std::string name() const override { return "think_format_reward"; }
  std::vector<double> rewards(const RewardBatch& batch) const override {
    std::vector<double> out;
    for (const std::string& text : batch.completions) {
      out.push_back(think_format_matches(prefilled_ ? kThinkOpen + text : text) ? 1.0 : 0.0);
    }
    return out;
  }

 private:
  bool prefilled_;
};

class SoftOverlong : public RewardFunction {
 public:
  SoftOverlong(int64_t max_length, int64_t cache) : max_length_(max_length), cache_(cache) {}
  std::string name() const override { return "soft_overlong_punishment_reward"; }  // its __name__ in TRL
  std::vector<double> rewards(const RewardBatch& batch) const override {
    std::vector<double> out;
    for (const auto& ids : batch.completion_ids) {
      out.push_back(soft_overlong_punishment(static_cast<int64_t>(ids.size()), max_length_, cache_));
    }
    return out;
  }

 private:
  int64_t max_length_, cache_;
};

class MathAnswer : public RewardFunction {
 public:
  MathAnswer(std::string column, std::string key) : column_(std::move(column)), key_(std::move(key)) {}
  std::string name() const override { return "math_answer"; }
  std::vector<double> rewards(const RewardBatch& batch) const override {
    if (!batch.columns.contains(column_)) {
      throw RewardError("reward math_answer: the dataset has no column '" + column_ +
                        "' holding the reference answers; name it with " + key_);
    }
    const nlohmann::json& references = batch.columns[column_];
    std::vector<double> out;
    for (size_t i = 0; i < batch.size(); ++i) {
      const nlohmann::json& reference = references.at(i);
      if (reference.is_null()) {
        out.push_back(std::numeric_limits<double>::quiet_NaN());  // no reference: no reward (TRL's None)
        continue;
      }
      const std::string gold = reference.is_string() ? reference.get<std::string>() : reference.dump();
      out.push_back(math_answer_reward(batch.completions[i], gold));
    }
    return out;
  }

 private:
  std::string column_, key_;
};

}  // namespace

bool think_format_matches(const std::string& text) {
  const std::string open = kThinkOpen;
  if (!starts_with(text, open)) return false;
  if (text.find(open, open.size()) != std::string::npos) return false;
  return text.find(kThinkClose, open.size()) != std::string::npos;
}

double soft_overlong_punishment(int64_t length, int64_t max_length, int64_t cache) {
  if (length <= max_length - cache) return 0.0;
  if (length <= max_length) return static_cast<double>(max_length - cache - length) / static_cast<double>(cache);
  return -1.0;
}

std::unique_ptr<RewardFunction> rule_reward(RuleReward rule, const RuleRewardOptions& options) {
  switch (rule) {
    case RuleReward::think_format_reward: return std::make_unique<ThinkFormat>(options.think_prefilled);
    case RuleReward::get_soft_overlong_punishment:
      return std::make_unique<SoftOverlong>(options.overlong_max_length, options.overlong_cache);
    case RuleReward::math_answer: return std::make_unique<MathAnswer>(options.answer_column, options.answer_column_key);
  }
  throw RewardError("no rule reward of this kind");
}

}  // namespace st

#include "model/lora_options.h"

#include <array>
#include <cmath>
#include <sstream>

#include "util/errors.h"
#include "util/text.h"

namespace st {
namespace {

size_t index_of(LoraTarget target) { return static_cast<size_t>(target); }

}  // namespace

std::vector<LoraTarget> lora_targets(const std::string& target_modules) {
  std::array<bool, kLoraTargetCount> chosen{};
  std::stringstream words(target_modules);
  std::string word;
  while (std::getline(words, word, ',')) {
    word = trimmed(word, " \t");
    if (word.empty()) continue;
    LoraTarget target{};
    if (!find_enum(word, target)) {
      throw ConfigError("lora.target_modules = '" + target_modules + "': '" + word + "' is not one of " +
                        enum_choices<LoraTarget>() + " (comma-separated)");
    }
    chosen[index_of(target)] = true;
  }
  std::vector<LoraTarget> targets;
  for (const auto& entry : EnumNames<LoraTarget>::table) {
    if (chosen[index_of(entry.value)]) targets.push_back(entry.value);
  }
  if (targets.empty()) {
    throw ConfigError("lora.target_modules = '" + target_modules + "' names no projection; choose from " +
                      enum_choices<LoraTarget>());
  }
  return targets;
}

std::string lora_target_words(const std::vector<LoraTarget>& targets) {
  std::string words;
  for (LoraTarget target : targets) words += (words.empty() ? "" : ",") + std::string(enum_name(target));
  return words;
}

double lora_scale(const LoraOptions& options) {
  const auto r = static_cast<double>(options.r);
  return options.alpha / (options.rslora ? std::sqrt(r) : r);
}

}  // namespace st

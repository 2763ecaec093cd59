#include "train/run_identity.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "train/train_arguments.h"

namespace st {
namespace {

// "section.key" -> value of an INI text as format_resolved_config writes it.
std::map<std::string, std::string> ini_values(const std::string& text) {
  std::map<std::string, std::string> values;
  std::istringstream in(text);
  std::string line, section;
  const auto trim = [](std::string s) {
    s.erase(0, s.find_first_not_of(" \t"));
    s.erase(s.find_last_not_of(" \t\r") + 1);
    return s;
  };
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = line.substr(1, line.size() - 2);
      continue;
    }
    const size_t equals = line.find('=');
    if (equals == std::string::npos) continue;
    std::string value = line.substr(equals + 1);
    const size_t comment = value.find("  #");
    if (comment != std::string::npos) value = value.substr(0, comment);
    values[section + "." + trim(line.substr(0, equals))] = trim(value);
  }
  return values;
}

// Every key defines the run (the model, the data, the objectives' sections, LoRA, the optimizer)
// but the run's length, logging, checkpoints, evaluation and the cluster's shape, and the knobs
// that change how a step is computed, not what.
bool defines_the_run(const std::string& name) {
  static const std::vector<std::string> free_sections = {"train.", "dist.", "ckpt.", "eval."};
  static const std::vector<std::string> fixed = {"train.stage", "train.method", "train.seed"};
  static const std::vector<std::string> free = {"data.prefetch_steps", "data.verify_checksums", "data.micro_batch_tokens",
                                                "data.group_by_length", "model.logp_chunk_tokens", "model.attention",
                                                "lora.host_embedding", "optim.offload", "optim.step_in_backward"};
  if (std::find(fixed.begin(), fixed.end(), name) != fixed.end()) return true;
  if (std::find(free.begin(), free.end(), name) != free.end()) return false;
  return std::none_of(free_sections.begin(), free_sections.end(), [&](const std::string& s) { return name.rfind(s, 0) == 0; });
}

}  // namespace

std::vector<std::string> changed_run_keys(const std::string& stored_ini, const TrainConfig& config) {
  const std::map<std::string, std::string> then = ini_values(stored_ini);
  const std::map<std::string, std::string> now = ini_values(format_resolved_config(config));
  std::vector<std::string> changed;
  for (const auto& [name, value] : now) {
    const auto stored = then.find(name);
    if (stored == then.end() || !defines_the_run(name) || stored->second == value) continue;
    changed.push_back(name + " = " + stored->second + " there, " + value + " now");
  }
  return changed;
}

}  // namespace st

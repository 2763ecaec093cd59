// rule_reward_outputs INPUTS.json OUT.json: the shardtune side of the rule-reward oracle
// (rule_rewards_test.sh): train/reward_functions.h's think_format_reward on the inputs' texts and
// get_soft_overlong_punishment (its registry values) on completions of the inputs' lengths, in
// rule_reward_peer.py's output shape.
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "train/reward_functions.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: rule_reward_outputs INPUTS.json OUT.json\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  const nlohmann::json data = nlohmann::json::parse(in);
  st::RewardBatch texts;
  texts.completions = data["completions"].get<std::vector<std::string>>();
  texts.completion_ids.resize(texts.completions.size());
  st::RewardBatch lengths;
  for (const int64_t n : data["lengths"].get<std::vector<int64_t>>()) {
    lengths.completion_ids.emplace_back(static_cast<size_t>(n), 7);
    lengths.completions.emplace_back();
  }
  const auto overlong = st::rule_reward(st::RuleReward::get_soft_overlong_punishment, {});
  nlohmann::json out;
  out["think_format_reward"] = st::rule_reward(st::RuleReward::think_format_reward, {})->rewards(texts);
  out["soft_overlong_punishment"] = overlong->rewards(lengths);
  out["overlong_name"] = overlong->name();
  std::ofstream(argv[2]) << out.dump(1);
  std::cout << "rule_reward_outputs: " << texts.size() << " texts, " << lengths.size() << " lengths\n";
  return 0;
}

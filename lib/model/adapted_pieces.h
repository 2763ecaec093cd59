// The base weights a layer's LoRA pairs change, each with the slice of its pair that changes it:
// what both merges walk (export --merge into shards, a LoRA checkpoint merged onto its base), so
// a dense projection's pair and a stacked experts' pair are merged by one rule.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "hf/model_config.h"
#include "hf/param_table.h"
#include "model/lora.h"

namespace st {

// Per pair of `targets` in `layer` found in `pairs` (PEFT names; a pair absent there is skipped):
// every weight it adapts (hf/param_table.h adapted_weights) with its slice (lora.h adapted_pair).
inline std::vector<std::pair<std::string, LoraPair>> adapted_pieces(const ModelConfig& config, int64_t layer,
                                                                    const std::vector<LoraTarget>& targets,
                                                                    const TensorMap& pairs) {
  std::vector<std::pair<std::string, LoraPair>> pieces;
  const std::vector<ParamSpec> specs = lora_layer_params(config, layer, targets, 1);
  for (size_t i = 0; i < specs.size(); i += 2) {  // A then B of each target
    const auto a = pairs.find(specs[i].name);
    if (a == pairs.end()) continue;
    const LoraPair stacked{a->second, pairs.at(specs[i + 1].name)};
    for (const AdaptedWeight& weight : adapted_weights(config, layer, specs[i].key.target)) {
      pieces.emplace_back(weight.weight, adapted_pair(stacked, weight, config.experts.num_experts));
    }
  }
  return pieces;
}

}  // namespace st

// A reward model's pairwise accuracy on a preference set (dpo-kind pair shards, e.g. held out
// of training): the share of pairs whose chosen completion it rewards above the rejected one,
// RewardTrainer's eval accuracy, with the mean rewards and margin. Pairs are split across ranks
// in contiguous blocks; the sums are reduced over `communicator`.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "distributed/communicator.h"
#include "model/llama_blocks.h"
#include "model/sequence_scorer.h"

namespace st {

// `directories`: pair dataset directories, comma-separated. Collective. Throws DataError for
// data that is not preference pairs or not of the model's vocabulary, ConfigError for a model
// that is no reward model. -> {"pairs", "accuracy", "accuracy_stderr", "margin",
// "rewards/chosen", "rewards/rejected"}.
nlohmann::ordered_json preference_accuracy(const std::string& directories, const LlamaWeights& weights,
                                           const ModelConfig& config, const ScorerOptions& options,
                                           Communicator& communicator);

}  // namespace st

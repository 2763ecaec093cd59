#include "eval/preference_accuracy.h"

#include <ATen/ATen.h>

#include <cmath>

#include "data/dataset_mixture.h"
#include "data/pair_dataset.h"
#include "util/errors.h"

namespace st {
namespace {

std::vector<int64_t> widened(const std::vector<int32_t>& ids) { return {ids.begin(), ids.end()}; }

}  // namespace

nlohmann::ordered_json preference_accuracy(const std::string& directories, const LlamaWeights& weights,
                                           const ModelConfig& config, const ScorerOptions& options,
                                           Communicator& communicator) {
  if (config.head != ModelHead::score) {
    throw ConfigError(std::string("eval --pairs: the model is a causal LM (") + hf_architecture(config) +
                      "); pairwise accuracy is a reward model's (train.stage = rm)");
  }
  DatasetExpectations expect;
  expect.kind = PairKind::dpo;
  expect.model_vocab_size = config.vocab_size;
  std::vector<std::string> paths;
  for (const MixtureEntry& entry : parse_mixture(directories, "eval --pairs")) paths.push_back(entry.directory);
  const PairDataset data(paths, expect);
  const uint64_t first = data.size() * static_cast<uint64_t>(communicator.rank()) / communicator.size();
  const uint64_t last = data.size() * static_cast<uint64_t>(communicator.rank() + 1) / communicator.size();
  std::vector<ScoreRequest> requests;  // every pair's chosen, then every pair's rejected
  std::vector<ScoreRequest> rejected;
  for (uint64_t i = first; i < last; ++i) {
    const Pair pair = data.get(i);
    requests.push_back({widened(pair.prompt), widened(pair.chosen)});
    rejected.push_back({widened(pair.prompt), widened(pair.rejected)});
  }
  const size_t mine = requests.size();
  requests.insert(requests.end(), rejected.begin(), rejected.end());
  const std::vector<ScoreResult> scored = score_sequences(weights, config, requests, options);
  at::Tensor sums = at::zeros({4}, at::kDouble);  // correct, margin, chosen, rejected
  auto sum = sums.accessor<double, 1>();
  for (size_t i = 0; i < mine; ++i) {
    const double chosen = scored[i].reward, other = scored[mine + i].reward;
    sum[0] += chosen > other ? 1.0 : 0.0;
    sum[1] += chosen - other;
    sum[2] += chosen;
    sum[3] += other;
  }
  communicator.all_reduce(sums, ReduceOp::sum);
  const auto pairs = static_cast<double>(data.size());
  const double accuracy = pairs > 0 ? sum[0] / pairs : 0.0;
  // The standard error of a mean of 0/1 outcomes (sample variance, as lm-eval's mean_stderr).
  const double stderr_value = pairs > 1 ? std::sqrt(accuracy * (1.0 - accuracy) * pairs / (pairs - 1) / pairs) : 0.0;
  nlohmann::ordered_json result;
  result["pairs"] = data.size();
  result["accuracy"] = accuracy;
  result["accuracy_stderr"] = stderr_value;
  result["margin"] = pairs > 0 ? sum[1] / pairs : 0.0;
  result["rewards/chosen"] = pairs > 0 ? sum[2] / pairs : 0.0;
  result["rewards/rejected"] = pairs > 0 ? sum[3] / pairs : 0.0;
  return result;
}

}  // namespace st

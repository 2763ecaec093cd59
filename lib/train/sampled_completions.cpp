#include "train/sampled_completions.h"

#include "fsdp/memory_estimate.h"
#include "fsdp/whole_model.h"
#include "util/errors.h"
#include "util/text.h"

namespace st {

namespace {

// Sampling `rows` completions at once: their caches, and those of the prompts prefilled for them.
SamplingMemory sampling_memory(const ModelConfig& config, const SamplingShape& shape, int64_t rows,
                               const EstimateInputs& in) {
  SamplingMemory need = estimate_sampling_memory(config, rows, shape.prompt_tokens + shape.completion_tokens, in);
  const int64_t prompts = (rows + shape.group - 1) / shape.group;
  need.caches += estimate_sampling_memory(config, prompts, shape.prompt_tokens, in).caches;
  return need;
}

}  // namespace

int64_t sampling_rows(const ModelConfig& config, const SamplingShape& wanted, const EstimateInputs& in,
                      int64_t available_bytes, const RolloutOptions& options) {
  const auto fits = [&](int64_t rows) { return sampling_memory(config, wanted, rows, in).total() <= available_bytes; };
  if (available_bytes < 0 || fits(wanted.rows)) return wanted.rows;
  if (!fits(1)) {
    const SamplingMemory need = sampling_memory(config, wanted, 1, in);
    throw ConfigError(std::string(options.section) + "'s rollouts: sampling one completion of up to " +
                      std::to_string(wanted.prompt_tokens + wanted.completion_tokens) + " tokens (data.cutoff_len + " +
                      options.key("max_completion_length") + ") needs " + gib_text(need.total()) +
                      " (the whole model " + gib_text(need.weights) + ", caches " + gib_text(need.caches) +
                      ", logits " + gib_text(need.logits) + "), and " + gib_text(available_bytes) +
                      " are free on the rank: lower " + options.key("max_completion_length") +
                      " or data.cutoff_len, or replay completions (" + options.key("rollouts") + ")");
  }
  int64_t low = 1, high = wanted.rows;  // fits(low), !fits(high)
  while (high - low > 1) {
    const int64_t middle = low + (high - low) / 2;
    (fits(middle) ? low : high) = middle;
  }
  return low;
}

namespace {

// A generation's own seed (splitmix64 of the run's and the generation's).
uint64_t generation_seed(uint64_t seed, int64_t generation) {
  uint64_t x = seed ^ (0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(generation) + 1));
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

SampledCompletions::SampledCompletions(const RolloutOptions& rollout, uint64_t seed, std::vector<int64_t> eos_ids,
                                       int64_t rows)
    : seed_(seed) {
  options_.batch_size = rows;
  options_.sampling.temperature = rollout.temperature;
  options_.sampling.top_p = rollout.top_p;
  options_.sampling.top_k = rollout.top_k;
  options_.sampling.min_p = rollout.min_p;
  options_.max_new_tokens = rollout.max_completion_length;
  options_.completions_per_prompt = rollout.num_generations;
  options_.eos_ids = std::move(eos_ids);
}

std::vector<GenerationResult> SampledCompletions::sample(FsdpModel& model, Communicator& host,
                                                         const std::vector<std::vector<int64_t>>& prompts,
                                                         int64_t generation, int64_t first, int64_t count) const {
  const int64_t group = options_.completions_per_prompt;
  // A group split between ranks is sampled whole by each (the same draws), and the other rank's
  // share dropped.
  const int64_t first_prompt = first / group;
  GenerationOptions options = options_;
  options.sampling.seed = generation_seed(seed_, generation);
  std::vector<GenerationResult> results;
  {
    const LlamaWeights whole = gather_whole_model(model, host);
    results = generate(whole, model.config(), prompts, options, static_cast<size_t>(first_prompt));
  }  // the gathered weights are freed before training
  const int64_t skip = first - first_prompt * group;
  return {results.begin() + skip, results.begin() + skip + count};
}

}  // namespace st

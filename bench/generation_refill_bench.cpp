// Decoding completions of long-tailed lengths, as a GRPO generation's are (most end early at
// EOS, some run to max_completion_length), with `rows` rows at a time: generate() refilling each
// finished row with the next completion, against the same requests in chunks of `rows`, each
// chunk decoded until its longest completion ends (no refill: a finished row waits for its chunk;
// the chunk still shrinks as its rows end, so this baseline is kinder than a fixed batch). Same
// weights, prompts, seeds and lengths on both sides, alternating in this run (medians of the
// rounds): seconds, new tokens/s, decode steps and the rows those steps carried.
// Usage: bench_generation_refill [preset=bench-100m] [prompts=16] [group=8] [rows=32]
//                                [max_new=256] [prompt_tokens=64] [device=cpu|cuda] [rounds=3]
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "hf/model_weights.h"
#include "hf/presets.h"
#include "model/generation.h"
#include "util/timer.h"

namespace {

using namespace st;

int64_t arg(int argc, char** argv, int index, int64_t fallback) {
  return argc > index ? std::atoll(argv[index]) : fallback;
}

// Each completion's length: a quarter run to `max_new`, the others end at a uniform share of it.
std::vector<size_t> tailed_lengths(size_t count, int64_t max_new) {
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> share(0.05, 0.5);
  std::vector<size_t> lengths;
  for (size_t i = 0; i < count; ++i) {
    const bool runs_out = random() % 4 == 0;
    lengths.push_back(runs_out ? static_cast<size_t>(max_new)
                               : std::max<size_t>(1, static_cast<size_t>(share(random) * static_cast<double>(max_new))));
  }
  return lengths;
}

struct Side {
  double seconds = 0;
  int64_t tokens = 0;
  GenerationStats stats;
};

void print(const char* name, const Side& side) {
  std::printf("  %-28s %8.2f s %10.1f tokens/s %7ld decode steps %9ld rows carried\n", name, side.seconds,
              static_cast<double>(side.tokens) / side.seconds, static_cast<long>(side.stats.decode_steps),
              static_cast<long>(side.stats.row_steps));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string preset = argc > 1 ? argv[1] : "bench-100m";
  const int64_t prompt_count = arg(argc, argv, 2, 16), group = arg(argc, argv, 3, 8), rows = arg(argc, argv, 4, 32);
  const int64_t max_new = arg(argc, argv, 5, 256), prompt_tokens = arg(argc, argv, 6, 64);
  const int64_t rounds = arg(argc, argv, 8, 3);
  const at::Device device(argc > 7 ? argv[7] : "cpu");
  const ModelConfig config = preset_config(preset);
  TensorMap tensors = init_preset_weights(config, 3, at::kFloat);
  for (auto& [name, tensor] : tensors) tensor = tensor.to(device);
  const LlamaWeights weights = llama_weights(tensors, config);

  std::mt19937_64 random(11);
  std::vector<std::vector<int64_t>> prompts(static_cast<size_t>(prompt_count));
  for (auto& prompt : prompts) {
    for (int64_t t = 0; t < prompt_tokens; ++t) prompt.push_back(static_cast<int64_t>(random() % static_cast<uint64_t>(config.vocab_size - 1)) + 1);
  }
  const std::vector<size_t> lengths = tailed_lengths(prompts.size() * static_cast<size_t>(group), max_new);
  GenerationOptions options;
  options.max_new_tokens = max_new;
  options.sampling = {1.0, 0, 1.0, 5};
  options.completions_per_prompt = group;
  options.batch_size = rows;
  // The lengths end completions (stop strings would), so both sides decode the same tokens.
  options.stop = [&](size_t index, const std::vector<int64_t>& ids) { return ids.size() >= lengths[index]; };

  std::printf("%s on %s: %ld prompts x %ld completions, prompt %ld, up to %ld new tokens, %ld rows\n",
              preset.c_str(), device.str().c_str(), static_cast<long>(prompt_count), static_cast<long>(group),
              static_cast<long>(prompt_tokens), static_cast<long>(max_new), static_cast<long>(rows));
  generate(weights, config, {prompts[0]}, options);  // warm-up

  // Each side `rounds` times, alternating so that drift and warm-up hit both; the medians.
  const auto refilled = [&] {
    Side side;
    const st::Timer timer;
    const auto results = generate(weights, config, prompts, options, 0, &side.stats);
    side.seconds = timer.seconds();
    for (const auto& result : results) side.tokens += static_cast<int64_t>(result.ids.size());
    return side;
  };
  const auto chunks = [&] {
    Side side;
    const size_t per_chunk = static_cast<size_t>(std::max<int64_t>(1, rows / group));  // whole groups
    const st::Timer timer;
    for (size_t first = 0; first < prompts.size(); first += per_chunk) {
      const std::vector<std::vector<int64_t>> chunk(
          prompts.begin() + static_cast<int64_t>(first),
          prompts.begin() + static_cast<int64_t>(std::min(prompts.size(), first + per_chunk)));
      GenerationStats stats;
      const auto results = generate(weights, config, chunk, options, first, &stats);
      for (const auto& result : results) side.tokens += static_cast<int64_t>(result.ids.size());
      side.stats.decode_steps += stats.decode_steps;
      side.stats.row_steps += stats.row_steps;
    }
    side.seconds = timer.seconds();
    return side;
  };
  std::vector<Side> refill_runs, chunked_runs;
  for (int64_t round = 0; round < rounds; ++round) {
    (round % 2 == 0 ? chunked_runs : refill_runs).push_back(round % 2 == 0 ? chunks() : refilled());
    (round % 2 == 0 ? refill_runs : chunked_runs).push_back(round % 2 == 0 ? refilled() : chunks());
  }
  const auto median = [](std::vector<Side> runs) {
    std::sort(runs.begin(), runs.end(), [](const Side& a, const Side& b) { return a.seconds < b.seconds; });
    return runs[runs.size() / 2];
  };
  const Side refill = median(refill_runs), chunked = median(chunked_runs);
  print("refilled rows", refill);
  print("chunks of rows (baseline)", chunked);
  if (refill.tokens != chunked.tokens) {
    std::fprintf(stderr, "the two sides decoded different tokens: %ld vs %ld\n", static_cast<long>(refill.tokens),
                 static_cast<long>(chunked.tokens));
    return 1;
  }
  std::printf("  refill: %.2fx the baseline's tokens/s, %.2fx fewer decode steps\n",
              chunked.seconds / refill.seconds,
              static_cast<double>(chunked.stats.decode_steps) / static_cast<double>(refill.stats.decode_steps));
  return 0;
}

// A learnable synthetic preference (or SFT) dataset for the demo, tests and benchmarks. Pair i
// depends only on (seed, i): prompt = BOS + random tokens; the chosen response is a fixed
// function of them (copy / reverse / sort) + EOS; the rejected one is the chosen with a fraction
// of its tokens replaced. Replacements come from a "noise" band at the top of the vocabulary
// that prompts never use, so a tiny model learns the preference in seconds (and the copy
// structure more slowly). Ids 0, 1, 2 are pad, BOS, EOS. Prompt examples keep the prompt alone;
// their record holds {"prompt_ids", "answer_ids"} (the chosen response) for the reward functions.
#pragma once

#include <cstdint>
#include <string>

#include "data/pair_table.h"
#include "util/enum_names.h"

namespace st {

// The chosen response as a function of the prompt's content tokens.
enum class SynthTask { copy, reverse, sort };
template <>
struct EnumNames<SynthTask> {
  static constexpr NamedValue<SynthTask> table[] = {
      {SynthTask::copy, "copy"}, {SynthTask::reverse, "reverse"}, {SynthTask::sort, "sort"}};
};

// How long prompts and responses are. uniform: prompt content uniform in [min_length,
// max_length], the response as long as the content. The others look like real preference data
// (lengths drawn per pair from log-normals, clamped; chosen and rejected drawn separately; the
// response is the task's output repeated to its length); parameters in docs/data-format.md:
//   ultrafeedback: prompts short, responses long (prompt median 130, response median 300)
//   long_prompt:   multi-turn / summarization-like (prompt median 1500, response median 200)
enum class SynthLengths { uniform, ultrafeedback, long_prompt };
template <>
struct EnumNames<SynthLengths> {
  static constexpr NamedValue<SynthLengths> table[] = {{SynthLengths::uniform, "uniform"},
                                                       {SynthLengths::ultrafeedback, "ultrafeedback"},
                                                       {SynthLengths::long_prompt, "long_prompt"}};
};

// A clamped log-normal length: median x exp(sigma x N(0, 1)) in [least, most] tokens.
struct LengthDistribution {
  double median = 0.0, sigma = 0.0;
  int64_t least = 1, most = 1;
};
struct LengthProfile {
  LengthDistribution prompt, response;
};
// The profile of a non-uniform choice.
LengthProfile length_profile(SynthLengths lengths);

struct SynthOptions {
  PairKind kind = PairKind::dpo;
  int64_t vocab_size = 512;
  int64_t min_length = 4;    // content tokens of a prompt
  int64_t max_length = 24;
  SynthLengths lengths = SynthLengths::uniform;
  SynthTask task = SynthTask::copy;
  double corrupt = 0.5;      // fraction of the rejected response's tokens replaced
  double noise_band = 0.25;  // top fraction of the vocabulary used only for replacements;
                             // 0: replacements from the whole vocabulary
  uint64_t seed = 0;
};

inline constexpr int32_t kSynthPad = 0, kSynthBos = 1, kSynthEos = 2;

// Pairs [first, first + count). Throws ConfigError for invalid options.
PairTable synthesize_pairs(const SynthOptions& options, uint64_t first, uint64_t count);

}  // namespace st

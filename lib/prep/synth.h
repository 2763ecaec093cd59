// A learnable synthetic preference (or SFT) dataset for the demo, tests and benchmarks. Pair i
// depends only on (seed, i): prompt = BOS + random tokens; the chosen response is a fixed
// function of them (copy / reverse / sort) + EOS; the rejected one is the chosen with a fraction
// of its tokens replaced. Replacements come from a "noise" band at the top of the vocabulary
// that prompts never use, so a tiny model learns the preference in seconds (and the copy
// structure more slowly). Ids 0, 1, 2 are pad, BOS, EOS.
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

struct SynthOptions {
  PairKind kind = PairKind::dpo;
  int64_t vocab_size = 512;
  int64_t min_length = 4;    // content tokens of a prompt
  int64_t max_length = 24;
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

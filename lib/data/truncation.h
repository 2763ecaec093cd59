// Fitting a pair into the cutoff length (prompt + longest response <= cutoff_len), or dropping it.
// How many prompt and response tokens stay is LlamaFactory's infer_seqlen (a short response whole,
// else a short prompt whole, else both in proportion to their lengths; at least one prompt
// token); the responses lose their ends, the prompt its start - LlamaFactory cuts the prompt's
// end, which drops the assistant header the response follows; TRL keeps the prompt's end too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "data/pair_table.h"

namespace st {

enum class TruncationPolicy { truncate, drop };
template <>
struct EnumNames<TruncationPolicy> {
  static constexpr NamedValue<TruncationPolicy> table[] = {{TruncationPolicy::truncate, "truncate"},
                                                           {TruncationPolicy::drop, "drop"}};
};

enum class FitResult { kept, truncated, dropped };

// Modifies `pair` in place. cutoff_len must be >= 2.
FitResult fit_to_cutoff(Pair& pair, int64_t cutoff_len, TruncationPolicy policy);

}  // namespace st

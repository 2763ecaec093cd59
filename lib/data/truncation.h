// Fitting a pair into the cutoff length (prompt + longest response <= cutoff_len): cut the prompt
// from the left first (keeping at least one token), then the responses from the right; or drop.
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

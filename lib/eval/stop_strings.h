// Stop strings of greedy or sampled generation (`shardtune generate --stop`, generate_until's
// `until`): a predicate the decoder asks after each token, and where the text is cut.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace st {

// Where the first of `stops` starts in `text`; npos if none does.
size_t first_stop(const std::string& text, const std::vector<std::string>& stops);

// True once the generated ids' text holds a stop string: only the last (longest stop + 1)
// tokens are decoded, since a stop of n bytes lies within them. `tokenizer` and `stops` must
// outlive it.
std::function<bool(size_t, const std::vector<int64_t>&)> stop_string_predicate(const Tokenizer& tokenizer,
                                                                              const std::vector<std::string>& stops);

}  // namespace st

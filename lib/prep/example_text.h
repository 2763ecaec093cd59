// The first example of a prepped dataset as text, so a user sees what the model will see: the
// special tokens written out, newlines as \n, and the tokens that carry loss between [[ and ]].
#pragma once

#include <string>
#include <vector>

#include "data/pair_table.h"
#include "tokenizer/tokenizer.h"

namespace st {

// One line per part ("prompt: ...", "chosen: [[...]]", "rejected: ..."; a prompt example's
// "record: {...}"), each part cut to
// `max_chars` characters of its middle (" ... ") when longer.
std::vector<std::string> example_lines(const Pair& pair, PairKind kind, const Tokenizer& tokenizer,
                                       size_t max_chars = 400);

}  // namespace st

// The JSONL files of `shardtune score`: input lines {"prompt_ids": [...], "completion_ids":
// [...]} checked against the model (vocabulary, context length), output lines {"logp",
// "token_logps", "num_tokens"} (a reward model's: {"reward"}; a mixture-of-experts model's with
// `--routing`: also "routing").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/sequence_scorer.h"

namespace st {

// Blank lines are skipped. Throws DataError naming file:line, the field and the fix.
std::vector<ScoreRequest> read_score_requests(const std::string& path, int64_t vocab_size,
                                              int64_t max_positions);

// {"logp", "token_logps", "num_tokens"} (with routing: "routing", per sparse layer {"layer",
// "experts", "weights"}, each token's top-k of prompt + completion), or a reward model's {"reward"}.
std::string format_score_line(const ScoreResult& result, ModelHead head);

}  // namespace st

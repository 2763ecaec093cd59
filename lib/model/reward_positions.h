// Where a reward model reads each sequence's reward (ModelHead::score): at its last token that
// is not the pad token, transformers' *ForSequenceClassification rule, so that an export serves
// the rewards training saw (with pad = eos, the token before a closing eos).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "data/row_layout.h"

namespace st {

// input_ids, targets [R, T] on the host (targets as in collate.h), `layout` as in
// make_token_batch, `pad_id` the model's pad_token_id (-1: none) -> [S] int64 on the host: row
// * T + position of each sequence's reward token. A sequence ends one past its last target (its
// last token), a plain row without targets at the row's end (a padding micro-batch); from there
// back over pad tokens, not past its first target. On right-padded plain rows that is the row's
// rightmost non-pad token, as transformers finds it. Throws ModelError for a laid-out (packed,
// prompt-shared) sequence without a target.
at::Tensor reward_positions(const at::Tensor& input_ids, const at::Tensor& targets, const RowLayout& layout,
                            int64_t pad_id);

}  // namespace st

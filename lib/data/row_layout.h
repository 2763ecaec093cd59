// Where sequences sit in a micro-batch's rows when they are packed (several per row) or share
// their prompt (DPO: one [prompt, chosen, rejected] segment per pair). A token attends to an
// earlier token of its row iff both are in the same segment and the earlier one is on the
// segment's shared part (branch 0) or on the token's own branch. An undefined layout is the
// plain one: one sequence per row, positions from 0, causal attention over the row.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace st {

// Branches of a prompt-shared DPO segment; an unshared sequence is all kSharedBranch.
constexpr int64_t kSharedBranch = 0, kChosenBranch = 1, kRejectedBranch = 2;
constexpr int64_t kPaddingSegment = -1;  // padding attends only to padding

struct RowLayout {
  at::Tensor position_ids;  // [R, T] int64: rotary position (restarts at 0 in each segment)
  at::Tensor segment_ids;   // [R, T] int64: attention never crosses segments
  at::Tensor branch_ids;    // [R, T] int64: kSharedBranch, kChosenBranch or kRejectedBranch
  at::Tensor sequence_ids;  // [R, T] int64: output sequence of the target at each position; -1 none
  int64_t sequences = 0;    // S: SFT one per pair; DPO chosen of every pair, then rejected

  bool defined() const { return position_ids.defined(); }
};

// [rows, width] host tensors of padding (position 0, kPaddingSegment, kSharedBranch, sequence
// -1), for a collation to fill in; `sequences` left 0.
RowLayout padding_row_layout(int64_t rows, int64_t width);

}  // namespace st

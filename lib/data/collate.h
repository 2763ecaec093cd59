// Pairs -> micro-batch tensors. Plain: each row is prompt + response, right-padded to the
// longest row; DPO rows [0, P) are prompt+chosen, rows [P, 2P) prompt+rejected, so one forward
// pass scores both. Packed or prompt-shared (packed_rows.h): rows hold several sequences and a
// RowLayout says where. Either way targets hold the next token at response positions and
// kIgnoreTarget elsewhere (the loss mask), and the model returns one log-prob sum per sequence
// in the same order: SFT pairs, or DPO chosen of every pair then rejected.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "data/pair_table.h"
#include "data/row_layout.h"
#include "data/truncation.h"

namespace st {

struct CollateOptions {
  int64_t cutoff_len = 1024;   // pairs longer than this are truncated (prompt left, response right)
  int64_t pad_id = 0;
  int64_t micro_batch = 1;     // pairs per micro-batch (when max_tokens is 0); KTO's partner groups
  int64_t max_tokens = 0;      // > 0: padded tokens per micro-batch instead of a pair count
  bool group_by_length = false;  // sort a rank's slice by length before cutting micro-batches
  bool packing = false;          // several whole sequences per row (data.packing)
  bool share_prompt = false;     // DPO: the prompt computed once per pair (dpo.share_prompt)

  // Rows not in the plain layout: packed, or DPO with a shared prompt.
  bool laid_out(PairKind kind) const { return packing || (share_prompt && sequences_of(kind) == 2); }
};

struct MicroBatch {
  at::Tensor input_ids;        // [R, T] int64 (plain: R = pairs for SFT, 2 x pairs for DPO)
  at::Tensor targets;          // [R, T] int64
  RowLayout layout;            // undefined in the plain layout (then S = R, sequence = row)
  at::Tensor ref_logps;        // [S] fp32 when the data has them (chosen, then rejected)
  at::Tensor labels;           // [pairs] bool, labelled kinds: each completion's label
  at::Tensor margins;          // [pairs] fp32 when the pairs have them (Pair::margin), else undefined
  at::Tensor target_counts;    // [S] int64: targets of each sequence
  // [R, T] fp32: the tokens of the unpacked sequences each position stands for (0 padding and a
  // mismatched partner's, 2 a shared prompt's, else 1): what the router's load-balancing loss
  // counts, as TRL counts the tokens of the rows it pads (KTO's partners it runs without gradient).
  at::Tensor token_weights;
  // Completions of an online objective (train/rollout_phase.h): each one's advantage [S] fp32,
  // and, on the device, the per-token log-probs [S, L] of the policy that generated them
  // (undefined: the policy's own, detached) and of the reference (undefined without a KL term),
  // in the head's per-token layout; `generation_tokens_per_completion`: the loss-carrying tokens
  // of the whole generation on all ranks over its completions (dapo's normaliser).
  at::Tensor advantages, old_token_logps, ref_token_logps;
  double generation_tokens_per_completion = 0.0;
  // What the objective's loss takes of every data-parallel rank's micro-batch at once
  // (Objective::values_over_ranks: GRPO's masked entropies), all ranks' [N] fp32 on the host;
  // undefined where it takes none.
  at::Tensor ranks_values;
  // Sampled completions: the sampler's log-prob of each loss-carrying token [tokens] (fp32, row
  // by row in order), for TRL's sampling/ metrics; undefined for replayed ones.
  at::Tensor sampling_token_logps;
  // Tokens of each causal stretch the rows compute (a plain row, a packed sequence, a shared
  // segment's prompt+chosen and its rejected branch): what the FLOP count is made of.
  std::vector<int64_t> segment_lengths;
  int64_t pairs = 0;
  int64_t target_tokens = 0;   // response tokens that carry loss
  int64_t real_tokens = 0;     // tokens of the sequences as unpacked pairs (logical tokens)
  int64_t computed_tokens = 0;  // tokens the rows hold (fewer than real with a shared prompt)
  int64_t padded_tokens = 0;   // R x T

  int64_t sequences() const { return layout.defined() ? layout.sequences : input_ids.size(0); }
};

// A kind whose second sequence is its mismatched partner's (SecondSequence::partner, KTO's
// reference point) has it in `rejected` (PairDataset::example); its rows lie as DPO's.
MicroBatch collate_pairs(std::vector<Pair> pairs, PairKind kind, const CollateOptions& options);

// [S] fp32 reference log-probs of the pairs in sequence order; undefined when they have none.
at::Tensor sequence_ref_logps(const std::vector<Pair>& pairs, PairKind kind);

// Groups of positions into `lengths` (tokens per pair: prompt + longest response), one group
// per micro-batch, in order; with group_by_length the slice is sorted by length first. A token
// budget counts padded rows, or with packing the pairs' tokens (a bound on what they fill).
std::vector<std::vector<size_t>> plan_micro_batches(const std::vector<int64_t>& lengths,
                                                    PairKind kind, const CollateOptions& options);

}  // namespace st

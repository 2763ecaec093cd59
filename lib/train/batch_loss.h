// The objective applied to one micro-batch: from the policy's (and the reference's) per-row
// log-probs to a summed loss and the additive sums the metrics are made of. Sums, not means,
// so that micro-batches, ranks and logging windows combine exactly: the trainer divides by the
// global pair (DPO) or completion-token (SFT) count of the step.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "data/collate.h"
#include "train/objectives.h"

namespace st {

enum class Stage { sft, dpo };

// Additive over micro-batches, steps and ranks.
struct LossSums {
  double loss = 0.0;              // summed per-pair (DPO) or per-token (SFT) losses
  double pairs = 0.0;             // pairs (DPO) or sequences (SFT)
  double target_tokens = 0.0;     // completion tokens that carry loss
  double real_tokens = 0.0;       // non-padding tokens
  double chosen_rewards = 0.0, rejected_rewards = 0.0, correct = 0.0;  // DPO
  double chosen_logps = 0.0, rejected_logps = 0.0;                     // DPO

  LossSums& operator+=(const LossSums& other);
  std::vector<double> pack() const;
  static LossSums unpack(const double* values);
  static constexpr size_t kPacked = 9;
  // Per pair (DPO) or per completion token (SFT): what the loss is normalised by.
  double loss_denominator(Stage stage) const { return stage == Stage::dpo ? pairs : target_tokens; }
};

struct MicroBatchResult {
  at::Tensor summed_loss;  // differentiable (when the log-probs are)
  LossSums sums;
};

// `policy` and `reference` are [R] summed completion log-probs in the batch's row order
// (DPO: chosen rows, then rejected rows); `reference` is ignored for SFT and reference-free
// losses. Rows after `valid_pairs` pairs are padding (weight 0; see padding_micro_batch).
MicroBatchResult micro_batch_loss(Stage stage, const MicroBatch& batch, const at::Tensor& policy,
                                  const at::Tensor& reference, const PreferenceLossOptions& options);

// A one-pair batch whose rows carry no target: what a rank runs when it has fewer
// micro-batches than another in the same step (FSDP's collectives need every rank to run
// the same number of forward and backward passes). Its loss and sums are zero.
MicroBatch padding_micro_batch(Stage stage, int64_t pad_id, bool with_ref_logps);

}  // namespace st

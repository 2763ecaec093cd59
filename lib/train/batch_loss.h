// What an objective (objective.h) makes of one micro-batch: a summed loss and the additive
// sums the metrics are made of. Sums, not means, so that micro-batches, ranks and logging
// windows combine exactly: the trainer divides by the step's global count (the objective's
// loss_denominator: pairs for DPO, completion tokens for SFT).
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "data/collate.h"
#include "train/objectives.h"

namespace st {

// Additive over micro-batches, steps and ranks: each field is summed (within a rank, across
// ranks and over a logging window) and declared once in kFields, which +=, the all-reduce
// packing, the device-side output sums and the metrics keys all follow.
struct LossSums {
  double loss = 0.0;              // summed per-pair (DPO) or per-token (SFT) losses
  double pairs = 0.0;             // pairs (DPO) or sequences (SFT)
  double target_tokens = 0.0;     // completion tokens that carry loss
  double real_tokens = 0.0;       // tokens of the pairs as unpacked sequences (logical tokens)
  double computed_tokens = 0.0;   // tokens the rows held (fewer with a shared prompt)
  double padded_tokens = 0.0;     // row slots, padding included
  double chosen_rewards = 0.0, rejected_rewards = 0.0, correct = 0.0;  // DPO
  double chosen_logps = 0.0, rejected_logps = 0.0;                     // DPO
  double micro_batches = 0.0;  // real (not padding) micro-batches
  double positive_labels = 0.0;  // labelled examples labelled desirable (the rest are undesirable)
  double kl = 0.0;             // KTO: each micro-batch's reference point, summed
  // A model with experts: the router's load-balancing loss of each training forward (each
  // rank's over its micro-batch), the same times its coefficient (part of the loss metric, as
  // TRL logs it), and those forwards.
  double router_loss = 0.0, weighted_router_loss = 0.0, router_forwards = 0.0;

  // Where a sum comes from: counted on the host from the batch, or from the model's output
  // (summed on the device, read once per window).
  enum class Source { host, output };
  // What a metric divides its sum by; none: the sum is no metric of its own.
  enum class Per { none, loss_denominator, pair, router_forward };
  struct Field {
    double LossSums::*value;
    Source source;
    const char* metric;  // key in metrics.jsonl (with "eval/" for evaluations)
    Per per;
    bool preference;  // a preference objective's row (objective.h: reports)
  };
  static constexpr Field kFields[] = {
      {&LossSums::loss, Source::output, "loss", Per::loss_denominator, false},
      {&LossSums::pairs, Source::host, nullptr, Per::none, false},
      {&LossSums::target_tokens, Source::host, nullptr, Per::none, false},
      {&LossSums::real_tokens, Source::host, nullptr, Per::none, false},
      {&LossSums::computed_tokens, Source::host, nullptr, Per::none, false},
      {&LossSums::padded_tokens, Source::host, nullptr, Per::none, false},
      {&LossSums::chosen_rewards, Source::output, "rewards/chosen", Per::pair, true},
      {&LossSums::rejected_rewards, Source::output, "rewards/rejected", Per::pair, true},
      {&LossSums::correct, Source::output, "rewards/accuracies", Per::pair, true},
      {&LossSums::chosen_logps, Source::output, "logps/chosen", Per::pair, true},
      {&LossSums::rejected_logps, Source::output, "logps/rejected", Per::pair, true},
      {&LossSums::micro_batches, Source::host, nullptr, Per::none, false},
      {&LossSums::positive_labels, Source::host, nullptr, Per::none, false},
      {&LossSums::kl, Source::output, nullptr, Per::none, false},
      {&LossSums::router_loss, Source::output, "aux_loss", Per::router_forward, false},
      {&LossSums::weighted_router_loss, Source::output, nullptr, Per::none, false},
      {&LossSums::router_forwards, Source::host, nullptr, Per::none, false}};
  static constexpr size_t kPacked = sizeof(kFields) / sizeof(kFields[0]);

  LossSums& operator+=(const LossSums& other);
  std::vector<double> pack() const;
  static LossSums unpack(const double* values);
};

// The sums from the model's output (LossSums::Source::output), in kFields order, as one
// [kOutputSums] fp64 tensor on the log-probs' device: a read per micro-batch would stall a
// GPU's queue, so they are added up there and read once per logged window.
constexpr size_t output_sum_count() {
  size_t count = 0;
  for (const LossSums::Field& field : LossSums::kFields) count += field.source == LossSums::Source::output;
  return count;
}
constexpr size_t kOutputSums = output_sum_count();
// The slot of `value` among the output sums; kOutputSums for a sum counted on the host.
constexpr size_t output_slot(double LossSums::*value) {
  size_t slot = 0;
  for (const LossSums::Field& field : LossSums::kFields) {
    const bool output = field.source == LossSums::Source::output;
    if (field.value == value) return output ? slot : kOutputSums;
    slot += output;
  }
  return kOutputSums;
}
// `sums` plus the output sums read to the host ([kOutputSums] fp64 on the CPU).
LossSums with_output_sums(LossSums sums, const at::Tensor& host_output_sums);

// A one-example batch whose rows carry no target: what a rank runs when it has fewer
// micro-batches than another in the same step (FSDP's collectives need every rank to run the
// same number of forward and backward passes). Its loss and sums are zero.
MicroBatch padding_micro_batch(PairKind kind, int64_t pad_id, bool with_ref_logps);

// A metric column an online objective reports per micro-batch (Objective::micro_metric_columns),
// and how the ranks' values of one micro-batch combine: summed, or TRL's nanmin / nanmax.
enum class RankCombine { sum, min, max };
struct MicroMetric {
  const char* name;
  RankCombine combine;
};

struct MicroBatchResult {
  at::Tensor summed_loss;  // differentiable (when the log-probs are)
  at::Tensor output_sums;  // [kOutputSums] fp64 on the log-probs' device
  LossSums counts;         // pairs, target_tokens, real_tokens (known on the host)
  // A model with experts in training: its coefficient x the router's load-balancing loss of this
  // rank's micro-batch (differentiable; the trainer averages it over the step's forwards, as TRL
  // does), and each sparse layer's top-k picks per expert [L, E] over every rank's tokens. Else
  // undefined.
  at::Tensor router_loss, expert_picks;
  // [K] fp64 on the device: the objective's micro_metric_columns for this micro-batch; undefined
  // for objectives without any, and for padding.
  at::Tensor micro_metrics;

  LossSums read_sums() const;  // counts + output sums: a host read (util/host_sync.h)
};

}  // namespace st

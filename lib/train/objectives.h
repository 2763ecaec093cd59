// Training objectives on per-sequence log-probs (sums over completion tokens, from the FSDP
// model's concatenated chosen+rejected forward). Formulas and sources: docs/objectives.md.
// The preference losses follow LlamaFactory's DPO trainer (and TRL's dpo_loss): sigmoid and
// hinge use summed log-probs, ipo / simpo / orpo per-token averages; ftx adds ftx x the chosen
// completion's NLL (LlamaFactory pref_ftx, RPO; averaged as dpo.nll_mean says).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "train/dpo_options.h"

namespace st {

bool needs_reference(PreferenceLoss loss);                      // simpo and orpo do not

struct PreferenceLossOptions {
  PreferenceLoss loss = PreferenceLoss::sigmoid;
  double beta = 0.1;
  double label_smoothing = 0.0;  // cDPO / robust DPO: assumed label-flip rate, sigmoid only
  double simpo_gamma = 0.5;      // SimPO target margin
  double ftx = 0.0;              // weight of the chosen completion's SFT loss
  NllMean nll_mean = NllMean::pair;               // how that NLL (and orpo's) is averaged
  LoggedLogps logged_logps = LoggedLogps::loss;   // what chosen/rejected logps and rewards report
};
// The [dpo] section's loss settings.
PreferenceLossOptions preference_loss_options(const DpoOptions& dpo);

// Per-sequence quantities of a batch of P pairs, each [P].
struct PairLogps {
  at::Tensor chosen, rejected;                  // summed completion log-probs
  at::Tensor chosen_tokens, rejected_tokens;    // completion token counts
};

struct PreferenceTerms {
  at::Tensor losses;                            // [P], differentiable
  at::Tensor chosen_rewards, rejected_rewards;  // [P], detached
  at::Tensor chosen_logps, rejected_logps;      // [P], detached: sums, or averages where used
};

// `reference` is ignored (may be empty) for simpo and orpo. With nll_mean = micro_batch_tokens
// the batch is one micro-batch and each pair carries its NLL (the batch's chosen-token mean) x
// `micro_batch_weight`: the step's pairs per micro-batch / this batch's pairs, so that the
// step's mean over pairs weighs every micro-batch alike, as TRL's mean of micro-batch losses does.
PreferenceTerms preference_loss(const PairLogps& policy, const PairLogps& reference,
                                const PreferenceLossOptions& options, double micro_batch_weight = 1.0);

// SFT: mean negative log-likelihood per completion token over the batch:
// -sum(logp sums) / sum(token counts).
at::Tensor sft_loss(const at::Tensor& summed_logps, const at::Tensor& token_counts);

}  // namespace st

// Training objectives on per-sequence log-probs (sums over completion tokens, from the FSDP
// model's concatenated chosen+rejected forward). Formulas and sources: docs/objectives.md.
// The preference losses follow LlamaFactory's DPO trainer (and TRL's dpo_loss): sigmoid and
// hinge use summed log-probs, ipo / simpo / orpo per-token averages; ftx adds ftx x the chosen
// completion's mean token NLL (LlamaFactory pref_ftx, RPO).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "train/train_options.h"  // PreferenceLoss

namespace st {

bool needs_reference(PreferenceLoss loss);                      // simpo and orpo do not

struct PreferenceLossOptions {
  PreferenceLoss loss = PreferenceLoss::sigmoid;
  double beta = 0.1;
  double label_smoothing = 0.0;  // cDPO / robust DPO: assumed label-flip rate, sigmoid only
  double simpo_gamma = 0.5;      // SimPO target margin
  double ftx = 0.0;              // weight of the chosen completion's SFT loss
};

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

// `reference` is ignored (may be empty) for simpo and orpo.
PreferenceTerms preference_loss(const PairLogps& policy, const PairLogps& reference,
                                const PreferenceLossOptions& options);

// SFT: mean negative log-likelihood per completion token over the batch:
// -sum(logp sums) / sum(token counts).
at::Tensor sft_loss(const at::Tensor& summed_logps, const at::Tensor& token_counts);

}  // namespace st

// The clipped policy-gradient loss of GRPO and its variants per completion token, as TRL's
// GRPOTrainer (1.16) computes it in _compute_loss: a pure function of per-token log-probs (the
// policy's, the generating policy's, the reference's), each completion's advantage and the
// completion mask. It returns per-sequence sums; how a micro-batch's sums become the step's loss
// (the loss type's normaliser) is policy_gradient_summed_loss.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "util/enum_names.h"

namespace st {

// grpo.loss_type, each by its normaliser of the summed token losses: dapo (TRL's default) the
// generation's completion tokens; grpo each completion's own tokens, then the completions; bnpo
// each micro-batch's tokens; dr_grpo completions x max_completion_length.
enum class GrpoLoss { dapo, grpo, dr_grpo, bnpo };
template <>
struct EnumNames<GrpoLoss> {
  static constexpr NamedValue<GrpoLoss> table[] = {
      {GrpoLoss::dapo, "dapo"}, {GrpoLoss::grpo, "grpo"}, {GrpoLoss::dr_grpo, "dr_grpo"}, {GrpoLoss::bnpo, "bnpo"}};
};

// grpo.importance_sampling_level: the ratio pi / pi_old per token, or one per completion from
// its mean token log-ratio (GSPO).
enum class RatioLevel { token, sequence };
template <>
struct EnumNames<RatioLevel> {
  static constexpr NamedValue<RatioLevel> table[] = {{RatioLevel::token, "token"}, {RatioLevel::sequence, "sequence"}};
};

struct PolicyGradientOptions {
  GrpoLoss loss = GrpoLoss::dapo;
  RatioLevel level = RatioLevel::token;
  double epsilon_low = 0.2, epsilon_high = 0.2;  // the ratio is clipped to [1 - low, 1 + high]
  double delta = 0.0;                            // > 0: the unclipped ratio is capped at delta too
  double beta = 0.0;                             // KL coefficient; 0: no reference
  bool bias_correction_kl = false;               // the KL term times the ratio
  int64_t max_completion_length = 256;           // dr_grpo's normaliser
};

// [S, T] tensors in one layout: row s holds completion s's tokens (anywhere along T); `mask` is
// 1 where a token carries loss. `old_logps` undefined: the policy's own, detached (one update per
// generation); `ref_logps` is needed with beta > 0; `entropy_mask` (bool, optional) keeps only
// the tokens TRL's top_entropy_quantile keeps.
struct PolicyGradientInputs {
  at::Tensor logps, old_logps, ref_logps, mask, entropy_mask;
  at::Tensor advantages;  // [S]
};

struct PolicyGradientTerms {
  at::Tensor sequence_losses;  // [S], differentiable: each completion's summed masked token losses
  at::Tensor tokens;           // [S]: each completion's masked tokens
  // Metric sums, detached, as TRL's global_masked_mean takes them: over masked tokens, or with
  // the sequence-level ratio over completions (clip_units says which count is behind them).
  at::Tensor kl_sum;                                  // [] masked per-token KL (beta > 0), else undefined
  at::Tensor low_clipped, high_clipped, region_clipped, clip_units;  // [] each
  // [S]: each completion's own share of clipped tokens (NaN for one without tokens), whose min
  // and max TRL logs (clip_ratio/low_min, clip_ratio/high_max).
  at::Tensor low_per_sequence, high_per_sequence;
};

// TRL's top_entropy_quantile: the masked tokens whose entropy is at least the (1 - quantile)
// quantile (linear interpolation) of the masked tokens' entropies, of `gathered` [N] (every
// rank's masked entropies; empty: this batch's own). [S, T] bool.
at::Tensor high_entropy_mask(const at::Tensor& entropies, const at::Tensor& mask, double quantile,
                             const at::Tensor& gathered = {});

PolicyGradientTerms policy_gradient_terms(const PolicyGradientInputs& inputs, const PolicyGradientOptions& options);

// RLOO (TRL 1.16's RLOOTrainer._compute_loss): one ratio per completion from its summed masked
// log-probs, exp(sum logps - sum old_logps), clipped to [1 - low, 1 + high]; each completion's loss
// counted once, not per token, and no KL term (RLOO puts the KL in the reward). The clip metrics
// count each completion once; kl_sum stays undefined. options.loss / level / delta / beta are
// not read.
PolicyGradientTerms leave_one_out_terms(const PolicyGradientInputs& inputs, const PolicyGradientOptions& options);

// What a micro-batch's loss is scaled by so that the step's loss is the sum over its
// micro-batches and ranks divided by the step's completions (on all ranks).
struct StepScale {
  // dapo: the step's completions over the generation's completion tokens (all ranks), times
  // steps_per_generation over gradient accumulation (TRL's num_items_in_batch normaliser).
  double dapo = 1.0;
  // bnpo: the step's completions over its micro-batches (each micro-batch's token mean weighs alike).
  double completions_per_micro_batch = 1.0;
};

// A micro-batch's summed loss from its terms: grpo the completions' token means; dr_grpo the
// token sums over max_completion_length; bnpo the micro-batch's token mean x
// completions_per_micro_batch; dapo the token sums x scale.dapo.
at::Tensor policy_gradient_summed_loss(const PolicyGradientTerms& terms, const PolicyGradientOptions& options,
                                       const StepScale& scale);
// RLOO's: the micro-batch's mean completion loss x completions_per_micro_batch (TRL's Trainer
// averages the micro-batches' means).
at::Tensor leave_one_out_summed_loss(const PolicyGradientTerms& terms, const StepScale& scale);

}  // namespace st

#include "train/policy_gradient_loss.h"

#include <ATen/ATen.h>

namespace st {
namespace {

at::Tensor detached_sum(const at::Tensor& values) { return values.detach().sum().to(at::kDouble); }

// The inputs beside the log-probs, in their dtype: the mask, the generating policy's log-probs
// (the policy's own, detached, where none are given: one update per generation) and the
// advantages as a column [S, 1].
struct AlignedInputs {
  at::Tensor mask, old_logps, advantages;
};
AlignedInputs aligned(const PolicyGradientInputs& in) {
  const auto type = in.logps.scalar_type();
  return {in.mask.to(type), in.old_logps.defined() ? in.old_logps.to(type) : in.logps.detach(),
          in.advantages.to(type).unsqueeze(1)};
}

// TRL's clip metrics: where the ratio left the clip region on the side the advantage's sign
// makes binding, counted over `units` ([S, T] masked tokens, or [S, 1] each completion once).
void count_clipped(const at::Tensor& ratio, const at::Tensor& advantages, const at::Tensor& units,
                   const PolicyGradientOptions& options, PolicyGradientTerms& terms) {
  const at::Tensor r = ratio.detach();
  const at::Tensor low = (r < 1.0 - options.epsilon_low).logical_and(advantages < 0).to(units.scalar_type());
  const at::Tensor high = (r > 1.0 + options.epsilon_high).logical_and(advantages > 0).to(units.scalar_type());
  const at::Tensor region = low.add(high).clamp_max(1.0);
  const at::Tensor units_per_sequence = units.sum(1);
  terms.low_clipped = detached_sum(low * units);
  terms.high_clipped = detached_sum(high * units);
  terms.region_clipped = detached_sum(region * units);
  terms.clip_units = detached_sum(units);
  terms.low_per_sequence = (low * units).sum(1) / units_per_sequence;  // 0 / 0: NaN, as TRL's
  terms.high_per_sequence = (high * units).sum(1) / units_per_sequence;
}

}  // namespace

at::Tensor high_entropy_mask(const at::Tensor& entropies, const at::Tensor& mask, double quantile,
                             const at::Tensor& gathered) {
  const at::Tensor keep = mask.to(at::kBool);
  const at::Tensor values = gathered.defined() ? gathered : entropies.masked_select(keep);
  if (values.numel() == 0) return at::zeros_like(keep);
  const at::Tensor threshold = at::quantile(values.to(entropies.device(), at::kFloat), 1.0 - quantile);
  return (entropies * mask.to(entropies.scalar_type()) >= threshold).logical_and(keep);
}

PolicyGradientTerms policy_gradient_terms(const PolicyGradientInputs& in, const PolicyGradientOptions& options) {
  const auto [mask, old_logps, advantages] = aligned(in);
  const at::Tensor tokens = mask.sum(1);
  const at::Tensor log_ratio = in.logps - old_logps;
  // [S, T] per token, or [S, 1] per completion (its mean token log-ratio: GSPO).
  const at::Tensor log_weights = options.level == RatioLevel::token
                                     ? log_ratio
                                     : ((log_ratio * mask).sum(1) / tokens.clamp_min(1.0)).unsqueeze(1);
  const at::Tensor ratio = at::exp(log_weights);
  const at::Tensor clipped = ratio.clamp(1.0 - options.epsilon_low, 1.0 + options.epsilon_high);
  const at::Tensor capped = options.delta > 0.0 ? ratio.clamp_max(options.delta) : ratio;
  at::Tensor token_losses = -at::min(capped * advantages, clipped * advantages);
  if (in.entropy_mask.defined()) token_losses = token_losses * in.entropy_mask.to(token_losses.scalar_type());

  PolicyGradientTerms terms;
  if (options.beta != 0.0) {
    const at::Tensor ref_gap = in.ref_logps.to(in.logps.scalar_type()) - in.logps;
    at::Tensor kl = at::exp(ref_gap) - ref_gap - 1.0;
    if (options.bias_correction_kl) kl = kl * ratio;
    token_losses = token_losses + options.beta * kl;
    terms.kl_sum = detached_sum(kl * mask);
  }
  terms.sequence_losses = (token_losses * mask).sum(1);
  terms.tokens = tokens.detach();

  // Counted on the ratio as capped at delta; over the masked tokens, or with the sequence ratio
  // each completion once.
  const at::Tensor units = options.level == RatioLevel::token ? mask : at::ones_like(capped);
  count_clipped(capped, advantages, units, options, terms);
  return terms;
}

PolicyGradientTerms leave_one_out_terms(const PolicyGradientInputs& in, const PolicyGradientOptions& options) {
  const auto [mask, old_logps, advantages] = aligned(in);
  const at::Tensor log_ratio = ((in.logps - old_logps) * mask).sum(1, /*keepdim=*/true);  // [S, 1]
  const at::Tensor ratio = at::exp(log_ratio);
  const at::Tensor clipped = ratio.clamp(1.0 - options.epsilon_low, 1.0 + options.epsilon_high);
  PolicyGradientTerms terms;
  terms.sequence_losses = (-at::min(ratio * advantages, clipped * advantages)).squeeze(1);
  terms.tokens = mask.sum(1).detach();
  count_clipped(ratio, advantages, at::ones_like(ratio), options, terms);
  return terms;
}

at::Tensor policy_gradient_summed_loss(const PolicyGradientTerms& terms, const PolicyGradientOptions& options,
                                       const StepScale& scale) {
  const at::Tensor& losses = terms.sequence_losses;
  switch (options.loss) {
    case GrpoLoss::grpo: return (losses / terms.tokens.clamp_min(1.0)).sum();
    case GrpoLoss::dr_grpo: return losses.sum() / static_cast<double>(options.max_completion_length);
    case GrpoLoss::bnpo: return losses.sum() / terms.tokens.sum().clamp_min(1.0) * scale.completions_per_micro_batch;
    case GrpoLoss::dapo: return losses.sum() * scale.dapo;
  }
  return losses.sum();
}

at::Tensor leave_one_out_summed_loss(const PolicyGradientTerms& terms, const StepScale& scale) {
  return terms.sequence_losses.mean() * scale.completions_per_micro_batch;
}

}  // namespace st

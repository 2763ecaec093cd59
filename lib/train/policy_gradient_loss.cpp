#include "train/policy_gradient_loss.h"

#include <ATen/ATen.h>

namespace st {
namespace {

at::Tensor detached_sum(const at::Tensor& values) { return values.detach().sum().to(at::kDouble); }

}  // namespace

at::Tensor high_entropy_mask(const at::Tensor& entropies, const at::Tensor& mask, double quantile,
                             const at::Tensor& gathered) {
  const at::Tensor keep = mask.to(at::kBool);
  const at::Tensor values = gathered.defined() ? gathered : entropies.masked_select(keep);
  if (values.numel() == 0) return at::zeros_like(keep);
  const at::Tensor threshold = at::quantile(values.to(at::kFloat), 1.0 - quantile);
  return (entropies * mask.to(entropies.scalar_type()) >= threshold).logical_and(keep);
}

PolicyGradientTerms policy_gradient_terms(const PolicyGradientInputs& in, const PolicyGradientOptions& options) {
  const at::Tensor mask = in.mask.to(in.logps.scalar_type());
  const at::Tensor old_logps = in.old_logps.defined() ? in.old_logps.to(in.logps.scalar_type()) : in.logps.detach();
  const at::Tensor advantages = in.advantages.to(in.logps.scalar_type()).unsqueeze(1);
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

  // TRL's clip metrics count where the ratio (capped at delta) left the clip region on the side
  // the advantage's sign makes binding.
  const at::Tensor r = capped.detach();
  const at::Tensor low = (r < 1.0 - options.epsilon_low).logical_and(advantages < 0).to(mask.scalar_type());
  const at::Tensor high = (r > 1.0 + options.epsilon_high).logical_and(advantages > 0).to(mask.scalar_type());
  const at::Tensor region = low.add(high).clamp_max(1.0);
  // What they are counted over: the masked tokens, or with the sequence ratio each completion once.
  const at::Tensor units = options.level == RatioLevel::token ? mask : at::ones_like(low);
  const at::Tensor units_per_sequence = units.sum(1);
  terms.low_clipped = detached_sum(low * units);
  terms.high_clipped = detached_sum(high * units);
  terms.region_clipped = detached_sum(region * units);
  terms.clip_units = detached_sum(units);
  terms.low_per_sequence = (low * units).sum(1) / units_per_sequence;  // 0 / 0: NaN, as TRL's
  terms.high_per_sequence = (high * units).sum(1) / units_per_sequence;
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

}  // namespace st

#include "train/objectives.h"

#include <ATen/ATen.h>

#include "util/errors.h"

namespace st {

namespace {

// log(1 - e^x) for x < 0 without cancellation: log(-expm1(x)) near 0, log1p(-e^x) below -ln 2
// (Maechler 2012). x is kept at or below -1e-6 (a mean token log-prob of 0, as in the padding
// micro-batch's empty rows, would give log 0 and a NaN loss even at weight 0).
at::Tensor log1mexp(const at::Tensor& x) {
  const at::Tensor below = x.clamp_max(-1e-6);
  return at::where(below > -0.6931471805599453, at::log(-at::expm1(below)), at::log1p(-at::exp(below)));
}

at::Tensor per_token(const at::Tensor& sums, const at::Tensor& tokens) {
  return sums / tokens.to(sums.scalar_type()).clamp_min(1);
}

// The chosen completion's negative log-likelihood per pair, averaged as dpo.nll_mean says.
at::Tensor chosen_nll(const PairLogps& policy, NllMean mean, double micro_batch_weight) {
  if (mean == NllMean::pair) return -per_token(policy.chosen, policy.chosen_tokens);
  const at::Tensor batch_mean = -per_token(policy.chosen.sum(), policy.chosen_tokens.sum());
  return (batch_mean * micro_batch_weight).expand_as(policy.chosen);
}

}  // namespace

PreferenceLossOptions preference_loss_options(const DpoOptions& p) {
  return {p.loss, p.beta, p.label_smoothing, p.simpo_gamma, p.ftx, p.nll_mean, p.logged_logps};
}

bool needs_reference(PreferenceLoss loss) { return loss != PreferenceLoss::simpo && loss != PreferenceLoss::orpo; }

PreferenceTerms preference_loss(const PairLogps& policy, const PairLogps& reference,
                                const PreferenceLossOptions& options, double micro_batch_weight) {
  const PreferenceLoss kind = options.loss;
  const double beta = options.beta;
  const bool averaged = kind == PreferenceLoss::ipo || kind == PreferenceLoss::simpo || kind == PreferenceLoss::orpo;
  const bool log_sums = options.logged_logps == LoggedLogps::sum;
  const at::Tensor chosen = averaged ? per_token(policy.chosen, policy.chosen_tokens) : policy.chosen;
  const at::Tensor rejected = averaged ? per_token(policy.rejected, policy.rejected_tokens) : policy.rejected;

  PreferenceTerms terms;
  if (needs_reference(kind)) {
    const at::Tensor ref_chosen = averaged ? per_token(reference.chosen, reference.chosen_tokens) : reference.chosen;
    const at::Tensor ref_rejected =
        averaged ? per_token(reference.rejected, reference.rejected_tokens) : reference.rejected;
    const at::Tensor h = (chosen - rejected) - (ref_chosen - ref_rejected);
    if (kind == PreferenceLoss::sigmoid) {
      const double eps = options.label_smoothing;
      terms.losses = -at::log_sigmoid(beta * h) * (1.0 - eps) - at::log_sigmoid(-beta * h) * eps;
    } else if (kind == PreferenceLoss::hinge) {
      terms.losses = at::relu(1.0 - beta * h);
    } else {  // ipo
      terms.losses = (h - 1.0 / (2.0 * beta)).pow(2);
    }
    terms.chosen_rewards = (beta * (log_sums ? policy.chosen - reference.chosen : chosen - ref_chosen)).detach();
    terms.rejected_rewards =
        (beta * (log_sums ? policy.rejected - reference.rejected : rejected - ref_rejected)).detach();
  } else {
    if (kind == PreferenceLoss::simpo) {
      terms.losses = -at::log_sigmoid(beta * (chosen - rejected) - options.simpo_gamma);
    } else {  // orpo: log odds of chosen over rejected, log(p / (1 - p)) with p the mean token prob
      const at::Tensor log_odds = (chosen - rejected) - (log1mexp(chosen) - log1mexp(rejected));
      terms.losses = chosen_nll(policy, options.nll_mean, micro_batch_weight) - beta * at::log_sigmoid(log_odds);
    }
    terms.chosen_rewards = (beta * (log_sums ? policy.chosen : chosen)).detach();
    terms.rejected_rewards = (beta * (log_sums ? policy.rejected : rejected)).detach();
  }
  if (options.ftx > 0.0) {
    terms.losses = terms.losses + options.ftx * chosen_nll(policy, options.nll_mean, micro_batch_weight);
  }
  terms.chosen_logps = (log_sums ? policy.chosen : chosen).detach();
  terms.rejected_logps = (log_sums ? policy.rejected : rejected).detach();
  return terms;
}

at::Tensor sft_loss(const at::Tensor& summed_logps, const at::Tensor& token_counts) {
  return -summed_logps.sum() / token_counts.sum().to(summed_logps.scalar_type()).clamp_min(1);
}

}  // namespace st

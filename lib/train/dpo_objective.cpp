// train.stage = dpo: a chosen and a rejected completion per example; the loss is the
// preference loss dpo.loss names (objectives.h) per pair, averaged over the step's pairs, with
// TRL's reward and log-prob rows.
#include <ATen/ATen.h>

#include "train/objective.h"

namespace st {
namespace {

class DpoObjective : public Objective {
 public:
  Stage stage() const override { return Stage::dpo; }
  PairKind example_kind() const override { return PairKind::dpo; }
  bool needs_reference(const TrainConfig& config) const override { return st::needs_reference(config.dpo.loss); }
  std::string describe(const TrainConfig& config, const char* reference) const override;
  double loss_denominator(const LossSums& sums) const override { return sums.pairs; }
  bool reports(const LossSums::Field&) const override { return true; }
  void add_derived_metrics(const LossSums& sums, const std::string& prefix,
                           nlohmann::ordered_json& record) const override;

 protected:
  at::Tensor summed_loss(const MicroBatch& batch, const at::Tensor& policy, const at::Tensor& reference,
                         const at::Tensor& target_tokens, const ObjectiveSections& sections,
                         double micro_batch_weight, std::vector<at::Tensor>* outputs) const override;
};

at::Tensor sum_of(const at::Tensor& values) { return values.detach().sum().to(at::kDouble); }

}  // namespace

std::string DpoObjective::describe(const TrainConfig& config, const char* reference) const {
  return "dpo (" + std::string(enum_name(config.dpo.loss)) + ", reference " + reference + ")";
}

void DpoObjective::add_derived_metrics(const LossSums& s, const std::string& prefix,
                                       nlohmann::ordered_json& record) const {
  // The mean gap between the chosen and rejected rewards.
  record[prefix + "rewards/margins"] = s.pairs > 0.0 ? (s.chosen_rewards - s.rejected_rewards) / s.pairs : 0.0;
}

// The batch's rows are every pair's chosen sequence, then every pair's rejected one.
at::Tensor DpoObjective::summed_loss(const MicroBatch&, const at::Tensor& policy, const at::Tensor& reference,
                                     const at::Tensor& tokens, const ObjectiveSections& sections,
                                     double micro_batch_weight, std::vector<at::Tensor>* outputs) const {
  const int64_t rows = policy.size(0) / 2;
  const PairLogps pair{policy.slice(0, 0, rows), policy.slice(0, rows), tokens.slice(0, 0, rows),
                       tokens.slice(0, rows)};
  PairLogps ref;
  if (reference.defined()) {
    const at::Tensor frozen = reference.detach().to(policy.scalar_type());
    ref = {frozen.slice(0, 0, rows), frozen.slice(0, rows), pair.chosen_tokens, pair.rejected_tokens};
  }
  const PreferenceTerms terms = preference_loss(pair, ref, preference_loss_options(sections.dpo), micro_batch_weight);
  if (outputs) {
    std::vector<at::Tensor>& out = *outputs;
    out[output_slot(&LossSums::chosen_rewards)] = sum_of(terms.chosen_rewards);
    out[output_slot(&LossSums::rejected_rewards)] = sum_of(terms.rejected_rewards);
    out[output_slot(&LossSums::correct)] = sum_of(terms.chosen_rewards.gt(terms.rejected_rewards));
    out[output_slot(&LossSums::chosen_logps)] = sum_of(terms.chosen_logps);
    out[output_slot(&LossSums::rejected_logps)] = sum_of(terms.rejected_logps);
  }
  return terms.losses.sum();
}

const Objective& dpo_objective() {
  static const DpoObjective objective;
  return objective;
}

}  // namespace st

// train.stage = dpo: a chosen and a rejected completion per example; the loss is the
// preference loss dpo.loss names (objectives.h) per pair, averaged over the step's pairs, with
// TRL's reward and log-prob rows.
#pragma once

#include "train/objective.h"

namespace st {

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
                         const at::Tensor& target_tokens, const PreferenceLossOptions& options,
                         double micro_batch_weight, std::vector<at::Tensor>* outputs) const override;
};

}  // namespace st

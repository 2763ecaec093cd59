// train.stage = kto: one completion per example, labelled desirable or not (KTO, Ethayarajh et
// al. 2024, as TRL's KTOTrainer computes it). The reference point z is each micro-batch's mean
// of log pi/pi_ref over its mismatched pairs (each example's prompt with its partner's
// completion: mismatched_partner, data/pair_dataset.h), clamped at 0 and without gradient; a desirable completion's loss is
// w_d (1 - sigmoid(beta (r - z))), an undesirable one's w_u (1 - sigmoid(beta (z - r))), with r its
// log pi/pi_ref; averaged over the step's examples.
#pragma once

#include "train/objective.h"

namespace st {

class KtoObjective : public Objective {
 public:
  Stage stage() const override { return Stage::kto; }
  PairKind example_kind() const override { return PairKind::kto; }
  bool needs_reference(const TrainConfig&) const override { return true; }
  PreferenceLossOptions loss_options(const TrainConfig& config) const override;
  int64_t min_micro_batch() const override { return 2; }
  const char* why_min_micro_batch() const override {
    return "its reference point pairs each prompt with another example's completion, from groups of "
           "train.micro_batch examples; in a group of one that is its own completion (TRL refuses it too)";
  }
  std::string describe(const TrainConfig& config, const char* reference) const override;
  double loss_denominator(const LossSums& sums) const override { return sums.pairs; }
  // Its rewards and log-probs are means over the desirable or the undesirable examples, not
  // over pairs: add_derived_metrics writes them.
  bool reports(const LossSums::Field& field) const override { return !field.preference; }
  void add_derived_metrics(const LossSums& sums, const std::string& prefix,
                           nlohmann::ordered_json& record) const override;

 protected:
  at::Tensor summed_loss(const MicroBatch& batch, const at::Tensor& policy, const at::Tensor& reference,
                         const at::Tensor& target_tokens, const PreferenceLossOptions& options,
                         double micro_batch_weight, std::vector<at::Tensor>* outputs) const override;
};

}  // namespace st

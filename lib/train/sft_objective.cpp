// train.stage = sft: one completion per example; the loss is its tokens' negative log-likelihood,
// averaged over the step's completion tokens (TRL's SFTTrainer).
#include "train/objective.h"

namespace st {
namespace {

class SftObjective : public Objective {
 public:
  Stage stage() const override { return Stage::sft; }
  PairKind example_kind() const override { return PairKind::sft; }
  bool needs_reference(const TrainConfig&) const override { return false; }
  std::string describe(const TrainConfig&, const char*) const override { return "sft"; }
  double loss_denominator(const LossSums& sums) const override { return sums.target_tokens; }
  bool reports(const LossSums::Field& field) const override { return !field.preference; }

 protected:
  at::Tensor summed_loss(const MicroBatch&, const at::Tensor& policy, const at::Tensor&, const at::Tensor&,
                         const ObjectiveSections&, double, std::vector<at::Tensor>*) const override {
    return -policy.sum();
  }
};

}  // namespace

const Objective& sft_objective() {
  static const SftObjective objective;
  return objective;
}

}  // namespace st

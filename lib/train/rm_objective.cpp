// train.stage = rm: a reward model (Bradley-Terry) on the preference pairs, as TRL's
// RewardTrainer computes it. The model's head is a score (ModelHead::score): one reward per
// sequence, read at its last non-padding token. A pair's loss is -log sigmoid(r_chosen -
// r_rejected - margin) (the pair's margin column, if the data has one), plus
// rm.center_rewards_coefficient x (r_chosen + r_rejected)^2; averaged over the step's pairs.
// Metrics: the mean chosen and rejected rewards, their margin and the accuracy. With LoRA or
// QLoRA the score trains in full beside the adapters (PEFT's modules_to_save).
#include <ATen/ATen.h>

#include <sstream>

#include "train/objective.h"
#include "util/host_sync.h"

namespace st {
namespace {

class RmObjective : public Objective {
 public:
  Stage stage() const override { return Stage::rm; }
  PairKind example_kind() const override { return PairKind::dpo; }
  ModelHead model_head() const override { return ModelHead::score; }
  bool adds_router_loss_by_default() const override { return false; }  // TRL's RewardTrainer adds none
  bool needs_reference(const TrainConfig&) const override { return false; }
  std::string describe(const TrainConfig& config, const char*) const override;
  double loss_denominator(const LossSums& sums) const override { return sums.pairs; }
  // Rewards, not log-probs: the policy's output is the score.
  bool reports(const LossSums::Field& field) const override {
    return field.value != &LossSums::chosen_logps && field.value != &LossSums::rejected_logps;
  }
  void add_derived_metrics(const LossSums& sums, const std::string& prefix,
                           nlohmann::ordered_json& record) const override;

 protected:
  at::Tensor summed_loss(const MicroBatch& batch, const at::Tensor& rewards, const at::Tensor& reference,
                         const at::Tensor& target_tokens, const ObjectiveSections& sections,
                         double micro_batch_weight, std::vector<at::Tensor>* outputs) const override;
};

at::Tensor sum_of(const at::Tensor& values) { return values.detach().sum().to(at::kDouble); }

}  // namespace

std::string RmObjective::describe(const TrainConfig& config, const char*) const {
  std::ostringstream out;
  out << "rm (Bradley-Terry";
  if (config.rm.center_rewards_coefficient > 0.0) out << ", rewards centred x " << config.rm.center_rewards_coefficient;
  out << ")";
  return out.str();
}

void RmObjective::add_derived_metrics(const LossSums& s, const std::string& prefix,
                                      nlohmann::ordered_json& record) const {
  record[prefix + "rewards/margins"] = s.pairs > 0.0 ? (s.chosen_rewards - s.rejected_rewards) / s.pairs : 0.0;
}

// The batch's rows are every pair's chosen sequence, then every pair's rejected one.
at::Tensor RmObjective::summed_loss(const MicroBatch& batch, const at::Tensor& rewards, const at::Tensor&,
                                    const at::Tensor&, const ObjectiveSections& sections, double,
                                    std::vector<at::Tensor>* outputs) const {
  if (!outputs) return rewards.sum();  // padding: no pair (the caller zeroes it)
  const int64_t rows = rewards.size(0) / 2;
  const at::Tensor chosen = rewards.slice(0, 0, rows), rejected = rewards.slice(0, rows);
  at::Tensor gap = chosen - rejected;
  if (batch.margins.defined()) gap = gap - to_device_async(batch.margins, rewards.device()).to(rewards.scalar_type());
  at::Tensor losses = -at::log_sigmoid(gap);
  const double centring = sections.rm.center_rewards_coefficient;
  if (centring > 0.0) losses = losses + centring * (chosen + rejected).pow(2);
  std::vector<at::Tensor>& out = *outputs;
  out[output_slot(&LossSums::chosen_rewards)] = sum_of(chosen);
  out[output_slot(&LossSums::rejected_rewards)] = sum_of(rejected);
  out[output_slot(&LossSums::correct)] = sum_of(chosen.gt(rejected));
  return losses.sum();
}

const Objective& rm_objective() {
  static const RmObjective objective;
  return objective;
}

}  // namespace st

// train.stage = kto: one completion per example, labelled desirable or not (KTO, Ethayarajh et
// al. 2024, as TRL's KTOTrainer computes it). The reference point z is each micro-batch's mean
// of log pi/pi_ref over its mismatched pairs (each example's prompt with its partner's
// completion: mismatched_partner, data/pair_dataset.h), clamped at 0 and without gradient; a desirable completion's loss is
// w_d (1 - sigmoid(beta (r - z))), an undesirable one's w_u (1 - sigmoid(beta (z - r))), with r its
// log pi/pi_ref; averaged over the step's examples.
#include <ATen/ATen.h>

#include <sstream>

#include "train/objective.h"
#include "util/host_sync.h"

namespace st {
namespace {

class KtoObjective : public Objective {
 public:
  Stage stage() const override { return Stage::kto; }
  PairKind example_kind() const override { return PairKind::kto; }
  bool needs_reference(const TrainConfig&) const override { return true; }
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
                         const at::Tensor& target_tokens, const ObjectiveSections& sections,
                         double micro_batch_weight, std::vector<at::Tensor>* outputs) const override;
};

// A masked sum that stays on the device (masked_select would read its size to the host).
at::Tensor sum_where(const at::Tensor& values, const at::Tensor& where) {
  return (values.detach() * where.to(values.scalar_type())).sum().to(at::kDouble);
}

double mean(double sum, double count) { return count > 0.0 ? sum / count : 0.0; }

}  // namespace

std::string KtoObjective::describe(const TrainConfig& config, const char* reference) const {
  std::ostringstream out;
  out << "kto (beta " << config.kto.beta << ", desirable weight " << config.kto.desirable_weight << ", undesirable "
      << config.kto.undesirable_weight << ", reference " << reference << ")";
  return out.str();
}

void KtoObjective::add_derived_metrics(const LossSums& s, const std::string& prefix,
                                       nlohmann::ordered_json& record) const {
  const double undesirable = s.pairs - s.positive_labels;
  record[prefix + "rewards/chosen"] = mean(s.chosen_rewards, s.positive_labels);
  record[prefix + "rewards/rejected"] = mean(s.rejected_rewards, undesirable);
  record[prefix + "rewards/margins"] = mean(s.chosen_rewards, s.positive_labels) - mean(s.rejected_rewards, undesirable);
  record[prefix + "logps/chosen"] = mean(s.chosen_logps, s.positive_labels);
  record[prefix + "logps/rejected"] = mean(s.rejected_logps, undesirable);
  record[prefix + "kl"] = mean(s.kl, s.micro_batches);
}

// Rows: every example's own completion, then every example's mismatched one.
at::Tensor KtoObjective::summed_loss(const MicroBatch& batch, const at::Tensor& policy, const at::Tensor& reference,
                                     const at::Tensor&, const ObjectiveSections& sections, double,
                                     std::vector<at::Tensor>* outputs) const {
  const int64_t rows = policy.size(0) / 2;
  if (!outputs) return policy.sum();  // padding: no example (the caller zeroes it)
  const at::Tensor frozen = reference.detach().to(policy.scalar_type());
  const at::Tensor logratios = policy.slice(0, 0, rows) - frozen.slice(0, 0, rows);
  const at::Tensor kl = (policy.slice(0, rows).detach() - frozen.slice(0, rows)).mean().clamp_min(0.0);
  const at::Tensor desirable = to_device_async(batch.labels, policy.device());
  const KtoOptions& kto = sections.kto;
  const double beta = kto.beta;
  const at::Tensor losses =
      at::where(desirable, kto.desirable_weight * (1.0 - at::sigmoid(beta * (logratios - kl))),
                kto.undesirable_weight * (1.0 - at::sigmoid(beta * (kl - logratios))));
  std::vector<at::Tensor>& out = *outputs;
  const at::Tensor rewards = beta * logratios.detach();
  const at::Tensor logps = policy.slice(0, 0, rows).detach();
  out[output_slot(&LossSums::chosen_rewards)] = sum_where(rewards, desirable);
  out[output_slot(&LossSums::rejected_rewards)] = sum_where(rewards, desirable.logical_not());
  out[output_slot(&LossSums::chosen_logps)] = sum_where(logps, desirable);
  out[output_slot(&LossSums::rejected_logps)] = sum_where(logps, desirable.logical_not());
  out[output_slot(&LossSums::kl)] = kl.to(at::kDouble);
  return losses.sum();
}

const Objective& kto_objective() {
  static const KtoObjective objective;
  return objective;
}

}  // namespace st

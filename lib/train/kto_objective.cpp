#include "train/kto_objective.h"

#include <ATen/ATen.h>

#include <sstream>

#include "util/host_sync.h"

namespace st {
namespace {

// A masked sum that stays on the device (masked_select would read its size to the host).
at::Tensor sum_where(const at::Tensor& values, const at::Tensor& where) {
  return (values.detach() * where.to(values.scalar_type())).sum().to(at::kDouble);
}

double mean(double sum, double count) { return count > 0.0 ? sum / count : 0.0; }

}  // namespace

PreferenceLossOptions KtoObjective::loss_options(const TrainConfig& config) const {
  PreferenceLossOptions options;
  options.beta = config.kto.beta;
  options.desirable_weight = config.kto.desirable_weight;
  options.undesirable_weight = config.kto.undesirable_weight;
  return options;
}

std::string KtoObjective::describe(const TrainConfig& config, const char* reference) const {
  std::ostringstream out;
  out << "kto (beta " << config.kto.beta << ", desirable weight " << config.kto.desirable_weight << ", undesirable "
      << config.kto.undesirable_weight << ", reference " << reference << ")";
  return out.str();
}

void KtoObjective::add_derived_metrics(const LossSums& s, const std::string& prefix,
                                       nlohmann::ordered_json& record) const {
  const double undesirable = s.pairs - s.desirable;
  record[prefix + "rewards/chosen"] = mean(s.chosen_rewards, s.desirable);
  record[prefix + "rewards/rejected"] = mean(s.rejected_rewards, undesirable);
  record[prefix + "rewards/margins"] = mean(s.chosen_rewards, s.desirable) - mean(s.rejected_rewards, undesirable);
  record[prefix + "logps/chosen"] = mean(s.chosen_logps, s.desirable);
  record[prefix + "logps/rejected"] = mean(s.rejected_logps, undesirable);
  record[prefix + "kl"] = mean(s.kl, s.micro_batches);
}

// Rows: every example's own completion, then every example's mismatched one.
at::Tensor KtoObjective::summed_loss(const MicroBatch& batch, const at::Tensor& policy, const at::Tensor& reference,
                                     const at::Tensor&, const PreferenceLossOptions& options, double,
                                     std::vector<at::Tensor>* outputs) const {
  const int64_t rows = policy.size(0) / 2;
  if (!outputs) return policy.sum();  // padding: no example (the caller zeroes it)
  const at::Tensor frozen = reference.detach().to(policy.scalar_type());
  const at::Tensor logratios = policy.slice(0, 0, rows) - frozen.slice(0, 0, rows);
  const at::Tensor kl = (policy.slice(0, rows).detach() - frozen.slice(0, rows)).mean().clamp_min(0.0);
  const at::Tensor desirable = to_device_async(batch.desirable, policy.device());
  const double beta = options.beta;
  const at::Tensor losses =
      at::where(desirable, options.desirable_weight * (1.0 - at::sigmoid(beta * (logratios - kl))),
                options.undesirable_weight * (1.0 - at::sigmoid(beta * (kl - logratios))));
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

}  // namespace st

// policy_gradient_outputs INPUTS.json OUT.json: the shardtune side of the GRPO and RLOO loss
// oracle (grpo_loss_test.sh): train/policy_gradient_loss.h on grpo_loss_inputs.py's cases in
// float64, with a micro-batch's share of the step's loss as TRL's _compute_loss returns it (one
// process: the step holds gradient_accumulation_steps micro-batches of these completions; RLOO's
// is not yet divided by them, which TRL's Trainer does after), its gradient in the log-probs, and
// the metrics TRL logs from it.
#include <ATen/ATen.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>

#include <nlohmann/json.hpp>

#include "train/policy_gradient_loss.h"

namespace {

using nlohmann::json;

at::Tensor tensor_of(const json& rows) {
  std::vector<at::Tensor> lines;
  for (const json& row : rows) lines.push_back(at::tensor(row.get<std::vector<double>>(), at::kDouble));
  return at::stack(lines);
}

double masked_mean(const at::Tensor& values, const at::Tensor& mask) {
  return ((values * mask).sum() / mask.sum().clamp_min(1.0)).item<double>();
}

// nanmin / nanmax of a [S] tensor.
double nan_extreme(const at::Tensor& values, bool max) {
  double best = std::numeric_limits<double>::quiet_NaN();
  for (int64_t i = 0; i < values.size(0); ++i) {
    const double v = values[i].item<double>();
    if (!std::isnan(v) && (std::isnan(best) || (max ? v > best : v < best))) best = v;
  }
  return best;
}

json run_case(const json& c, const json& t) {
  const bool rloo = c["trainer"].get<std::string>() == "rloo";
  st::PolicyGradientOptions options;
  if (!rloo && !st::find_enum(c["loss_type"].get<std::string>(), options.loss)) throw std::runtime_error("loss_type");
  if (!st::find_enum(c.value("importance_sampling_level", "token"), options.level)) throw std::runtime_error("level");
  options.epsilon_low = c["epsilon"].get<double>();
  options.epsilon_high = c["epsilon_high"].get<double>();
  options.delta = c.value("delta", 0.0);
  options.beta = c.value("beta", 0.0);
  options.bias_correction_kl = c.value("use_bias_correction_kl", false);
  options.max_completion_length = c.value("max_completion_length", int64_t{0});
  st::PolicyGradientInputs in;
  in.logps = tensor_of(t["logps"]).requires_grad_(true);
  in.mask = tensor_of(t["mask"]);
  in.advantages = at::tensor(t["advantages"].get<std::vector<double>>(), at::kDouble) * c.value("advantage_scale", 1.0);
  if (c["old"].get<bool>()) in.old_logps = tensor_of(t["old_logps"]);
  if (options.beta != 0.0) in.ref_logps = tensor_of(t["ref_logps"]);
  const at::Tensor entropies = tensor_of(t["entropies"]);
  const double quantile = c.value("top_entropy_quantile", 1.0);
  if (quantile < 1.0) in.entropy_mask = st::high_entropy_mask(entropies, in.mask, quantile);

  const st::PolicyGradientTerms terms =
      rloo ? st::leave_one_out_terms(in, options) : st::policy_gradient_terms(in, options);
  // One process: the step's completions are gradient_accumulation_steps micro-batches of these.
  const double completions = static_cast<double>(in.logps.size(0));
  const double accumulation = c["gradient_accumulation_steps"].get<double>();
  const double step_completions = completions * accumulation;
  st::StepScale scale;
  scale.dapo = step_completions * c["steps_per_generation"].get<double>() /
               (c["num_items_in_batch"].get<double>() * accumulation);
  scale.completions_per_micro_batch = completions;
  const at::Tensor share = rloo ? st::leave_one_out_summed_loss(terms, scale) / step_completions * accumulation
                                : st::policy_gradient_summed_loss(terms, options, scale) / step_completions;
  share.backward();

  json metrics;
  metrics["entropy"] = masked_mean(entropies, in.mask);
  if (terms.kl_sum.defined()) metrics["kl"] = (terms.kl_sum / in.mask.sum()).item<double>();
  const double units = terms.clip_units.item<double>();
  metrics["clip_ratio/low_mean"] = terms.low_clipped.item<double>() / std::max(units, 1.0);
  metrics["clip_ratio/high_mean"] = terms.high_clipped.item<double>() / std::max(units, 1.0);
  metrics["clip_ratio/region_mean"] = terms.region_clipped.item<double>() / std::max(units, 1.0);
  metrics["clip_ratio/low_min"] = nan_extreme(terms.low_per_sequence, false);
  metrics["clip_ratio/high_max"] = nan_extreme(terms.high_per_sequence, true);
  json grad = json::array();
  const at::Tensor g = in.logps.grad();
  for (int64_t s = 0; s < g.size(0); ++s) {
    json row = json::array();
    for (int64_t k = 0; k < g.size(1); ++k) row.push_back(g[s][k].item<double>());
    grad.push_back(row);
  }
  return {{"loss", share.item<double>()}, {"grad", grad}, {"metrics", metrics}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: policy_gradient_outputs INPUTS.json OUT.json\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  const json data = json::parse(in);
  json out;
  for (const json& c : data["cases"]) out[c["name"].get<std::string>()] = run_case(c, data["tensors"]);
  std::ofstream(argv[2]) << out.dump(1);
  std::cout << "policy_gradient_outputs: " << out.size() << " cases\n";
  return 0;
}

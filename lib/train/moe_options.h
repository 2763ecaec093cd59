// [moe]: how a mixture-of-experts model trains (a model without experts ignores the section).
#pragma once

#include "config/config_schema.h"
#include "hf/model_config.h"

namespace st {

struct MoeOptions {
  // model: the model's own router_aux_loss_coef (config.json), as TRL's trainers take it.
  static constexpr double kModelsCoefficient = -1.0;
  double aux_loss_coef = kModelsCoefficient;

  void bind(ConfigSchema& schema) {
    schema.section("moe", "mixture-of-experts models (docs/moe.md)");
    schema.add(&aux_loss_coef, "aux_loss_coef",
               "coefficient of the router's load-balancing loss (transformers' aux_loss, added to every training "
               "forward as TRL adds it); -1 = the model's router_aux_loss_coef (0 for train.stage = rm, as TRL's "
               "RewardTrainer); 0 = none (LlamaFactory's DPO)",
               at_least(kModelsCoefficient).meaning("-1 = the model's"));
  }
};

// The coefficient a run uses: 0 for a model without experts; by default the model's where the
// objective's TRL trainer adds the loss (Objective::adds_router_loss_by_default), else 0.
inline double router_loss_coefficient(const MoeOptions& options, bool objective_adds_it, const ModelConfig& model) {
  if (model.experts.num_experts == 0) return 0.0;
  if (options.aux_loss_coef != MoeOptions::kModelsCoefficient) return options.aux_loss_coef;
  return objective_adds_it ? model.experts.router_aux_loss_coef : 0.0;
}

}  // namespace st

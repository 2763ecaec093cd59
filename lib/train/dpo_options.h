// [dpo]: the preference objective's section (its loss, its variants, prompt sharing and where
// reference log-probs come from), declared once: the struct and, in bind(), its keys' help and
// ranges (--help, docs/configuration.md and validation read them).
#pragma once

#include "config/config_schema.h"
#include "util/enum_names.h"

namespace st {

// dpo.loss (formulas: objectives.h, docs/objectives.md).
enum class PreferenceLoss { sigmoid, ipo, hinge, simpo, orpo };
template <>
struct EnumNames<PreferenceLoss> {
  static constexpr NamedValue<PreferenceLoss> table[] = {{PreferenceLoss::sigmoid, "sigmoid"},
                                                         {PreferenceLoss::ipo, "ipo"},
                                                         {PreferenceLoss::hinge, "hinge"},
                                                         {PreferenceLoss::simpo, "simpo"},
                                                         {PreferenceLoss::orpo, "orpo"}};
};

// dpo.nll_mean: how the chosen completion's NLL term (dpo.ftx, and orpo's own) is averaged.
// pair: each pair's mean token NLL, averaged over the pairs (LlamaFactory pref_ftx and ORPO);
// micro_batch_tokens: over the chosen tokens of each micro-batch, then averaged over the step's
// micro-batches (TRL's loss_type [..., "sft"] and its ORPO trainer). They differ where chosen
// lengths differ. Details: docs/objectives.md.
enum class NllMean { pair, micro_batch_tokens };
template <>
struct EnumNames<NllMean> {
  static constexpr NamedValue<NllMean> table[] = {{NllMean::pair, "pair"},
                                                  {NllMean::micro_batch_tokens, "micro_batch_tokens"}};
};

// dpo.logged_logps: the log-probs behind logps/* and rewards/*: loss = those the loss uses
// (averages for ipo, simpo and orpo: LlamaFactory, TRL's CPO and ORPO trainers); sum = summed
// completion log-probs for every loss (TRL's DPOTrainer).
enum class LoggedLogps { loss, sum };
template <>
struct EnumNames<LoggedLogps> {
  static constexpr NamedValue<LoggedLogps> table[] = {{LoggedLogps::loss, "loss"}, {LoggedLogps::sum, "sum"}};
};

// dpo.reference: where reference log-probs come from (resolved per run: train_plan.h).
enum class ReferenceChoice { automatic, precomputed, online, none };
template <>
struct EnumNames<ReferenceChoice> {
  static constexpr NamedValue<ReferenceChoice> table[] = {{ReferenceChoice::automatic, "auto"},
                                                          {ReferenceChoice::precomputed, "precomputed"},
                                                          {ReferenceChoice::online, "online"},
                                                          {ReferenceChoice::none, "none"}};
};

struct DpoOptions {
  PreferenceLoss loss = PreferenceLoss::sigmoid;
  double beta = 0.1;
  double label_smoothing = 0.0;
  double simpo_gamma = 0.5;
  double ftx = 0.0;
  NllMean nll_mean = NllMean::pair;
  LoggedLogps logged_logps = LoggedLogps::loss;
  bool share_prompt = false;
  ReferenceChoice reference = ReferenceChoice::automatic;

  void bind(ConfigSchema& schema) {
    schema.section("dpo", "preference objective (train.stage = dpo)");
    schema.add(&loss, "loss", "preference loss (docs/objectives.md)");
    schema.add(&beta, "beta", "inverse temperature of the implicit reward", above(0));
    schema.add(&label_smoothing, "label_smoothing", "cDPO label-flip rate for sigmoid", within(0, 0.5, true));
    schema.add(&simpo_gamma, "simpo_gamma", "SimPO target reward margin");
    schema.add(&ftx, "ftx", "adds ftx x the chosen completion's SFT loss (LlamaFactory pref_ftx, RPO)", at_least(0));
    schema.add(&nll_mean, "nll_mean",
               "how the chosen NLL of ftx and orpo is averaged: pair = each pair's mean token NLL over the pairs "
               "(LlamaFactory); micro_batch_tokens = over each micro-batch's chosen tokens, then over micro-batches "
               "(TRL)");
    schema.add(&logged_logps, "logged_logps",
               "log-probs behind logps/* and rewards/*: loss = those the loss uses (averages for ipo/simpo/orpo: "
               "LlamaFactory, TRL CPO/ORPO); sum = summed (TRL DPOTrainer)");
    schema.add(&share_prompt, "share_prompt",
               "compute each pair's prompt once: one [prompt, chosen, rejected] segment whose rejected part never "
               "sees chosen; the same losses as two rows");
    schema.add(&reference, "reference",
               "reference log-probs: auto = precomputed if the data has them, none for simpo/orpo, else "
               "online; precomputed = from the shards (shardtune precompute-ref); online = a frozen copy");
  }
};

}  // namespace st

// The step contract: what a train.stage trains, as one object the step asks instead of
// branching on the stage. An objective declares the examples it reads (data's PairKind: an
// example's columns and the sequences it becomes), whether a step needs the reference model,
// its loss over one micro-batch with the metric sums it reports, and what the step's summed
// loss is normalised by. One per train.stage (objective_for); a new objective is a subclass in
// its own <name>_objective.cpp and a row in objective_for. docs/architecture.md lists what one
// writes.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "data/collate.h"
#include "hf/model_config.h"
#include "model/llama_units.h"
#include "train/batch_loss.h"
#include "train/group_advantages.h"
#include "train/train_config.h"

namespace st {

class Objective {
 public:
  virtual ~Objective() = default;

  virtual Stage stage() const = 0;
  // The dataset kind it reads: the example's columns, and its sequences in a batch.
  virtual PairKind example_kind() const = 0;
  int64_t sequences_per_example() const { return sequences_of(example_kind()); }
  // What the model's head computes: log-probs (lm) or one reward per sequence (score); the model
  // a run trains is its base model with this head (trained_model_config).
  virtual ModelHead model_head() const { return ModelHead::lm; }
  // Whether TRL's trainer of it adds a mixture-of-experts router's load-balancing loss unless
  // told otherwise (moe.aux_loss_coef = -1, moe_options.h).
  virtual bool adds_router_loss_by_default() const { return true; }
  // An online objective reads prompts and trains on completions a rollout phase makes of them
  // (rollout_phase.h), each micro-batch carrying its advantages and per-token log-probs.
  bool online() const { return example_kind() == PairKind::prompt; }
  // What the head returns for micro_batch_loss's `policy` and `reference` (per-token lines for an
  // online objective), on logits divided by logit_temperature.
  virtual HeadOutput head_output() const { return HeadOutput::sequence_sums; }
  virtual double logit_temperature(const ObjectiveSections&) const { return 1.0; }
  // An online objective's rollout settings (its section's: sampling, geometry, rule rewards);
  // null for the others.
  virtual const RolloutOptions* rollout_options(const ObjectiveSections&) const { return nullptr; }
  // An online objective's advantages of a generation (every rank's completions in the
  // generation's order) from their rewards and, where it penalizes_rewards_with_kl, each
  // completion's summed log-ratio of the generating policy to the reference (else empty).
  virtual GroupAdvantages generation_advantages(const RewardTable& rewards, const std::vector<double>& weights,
                                                const std::vector<double>& kl_sums,
                                                const ObjectiveSections& sections) const;
  // The KL to the reference is a penalty in the reward (RLOO), not a loss term: the generating
  // policy's and the reference's log-probs come before the advantages.
  virtual bool penalizes_rewards_with_kl(const ObjectiveSections&) const { return false; }
  // The generating policy's log-probs are computed at every generation (RLOO's ratio always
  // reads them), not only when a generation feeds more than one step (GRPO).
  virtual bool always_computes_old_logps() const { return false; }
  // What its loss needs of every data-parallel rank's micro-batch at once (TRL's GRPO takes
  // top_entropy_quantile's threshold over every process's tokens): this rank's values [n] fp32
  // (none for padding) from its forward's `policy`, or undefined where it needs none. The trainer
  // gathers them (collective, once per micro-batch) into the batch's ranks_values.
  virtual at::Tensor values_over_ranks(const MicroBatch&, const at::Tensor&, const ObjectiveSections&) const {
    return {};
  }
  // Prompt sharing (dpo.share_prompt) applies: several completions of one prompt per example.
  bool shares_prompts(bool requested) const { return requested && sequences_per_example() > 1; }
  // A step needs the reference model's log-probs (online or precomputed) under `config`.
  virtual bool needs_reference(const TrainConfig& config) const = 0;
  // The fewest examples a micro-batch must hold for its loss to be what it says, and why.
  virtual int64_t min_micro_batch() const { return 1; }
  virtual const char* why_min_micro_batch() const { return ""; }
  // What it asks of the rest of the config beyond min_micro_batch; throws ConfigError naming the
  // key, its value and why (check_objective_config).
  virtual void check_config(const TrainConfig&) const {}
  // "dpo (sigmoid, reference online)" for the logs; `reference` names the reference mode.
  virtual std::string describe(const TrainConfig& config, const char* reference) const = 0;

  // `policy` and `reference` are [S] summed completion log-probs (a score head's: rewards) in
  // the batch's sequence order; `reference` is undefined where none is needed; `sections` holds
  // its config section. A batch of no examples is padding (weight 0; padding_micro_batch).
  // `step_pairs_per_micro_batch`: the step's examples over its micro-batches on all ranks, for
  // losses that weigh each micro-batch (dpo.nll_mean); 0 = this batch's own (as in an evaluation).
  MicroBatchResult micro_batch_loss(const MicroBatch& batch, const at::Tensor& policy, const at::Tensor& reference,
                                    const ObjectiveSections& sections, double step_pairs_per_micro_batch = 0.0) const;
  // What a step's or window's summed loss is divided by.
  virtual double loss_denominator(const LossSums& sums) const = 0;
  // The metric rows it reports (metrics.jsonl keys), and rows derived from two sums.
  virtual bool reports(const LossSums::Field& field) const = 0;
  virtual void add_derived_metrics(const LossSums& sums, const std::string& prefix,
                                   nlohmann::ordered_json& record) const;
  // Metrics TRL's online trainers take per micro-batch over the ranks and average over a logging
  // window (kl, entropy, clip ratios): the columns of MicroBatchResult::micro_metrics, each
  // combined over the ranks as its MicroMetric says; `combined` holds one row per micro-batch.
  virtual std::vector<MicroMetric> micro_metric_columns() const { return {}; }
  virtual void add_micro_batch_metrics(const std::vector<std::vector<double>>& combined, const ObjectiveSections& sections,
                                       nlohmann::ordered_json& record) const;

 protected:
  // An online objective's check_config: its micro-batches are train.micro_batch completions in
  // the generation's order, one per row (no packing, token budgets, length grouping, context
  // parallelism or validation data); throws ConfigError naming the key.
  void check_online_batches(const TrainConfig& config) const;
  // The summed loss of a batch (differentiable); for a real batch, fills the output sums
  // (LossSums::Source::output, by output_slot) it reports besides the loss, and appends its
  // micro_metric_columns' values (fp64 scalars on the device) after them.
  virtual at::Tensor summed_loss(const MicroBatch& batch, const at::Tensor& policy, const at::Tensor& reference,
                                 const at::Tensor& target_tokens, const ObjectiveSections& sections,
                                 double micro_batch_weight, std::vector<at::Tensor>* outputs) const = 0;
};

// The objective a train.stage names.
const Objective& objective_for(Stage stage);

// The model train.stage trains from `base` (model.path's config, or the preset's): with the
// objective's head, and a score head's pad_token_id the data's `pad_id` (as TRL sets it from the
// tokenizer). Throws ConfigError for a reward model trained as a causal LM.
ModelConfig trained_model_config(const TrainConfig& config, ModelConfig base, int64_t pad_id);

// What the objective of train.stage asks of the rest of the config (e.g. KTO's 2 examples per
// micro-batch); throws ConfigError naming the key, its value and why. validate_config checks what
// any run needs and links no objective (the config fuzzer builds it alone).
void check_objective_config(const TrainConfig& config);

}  // namespace st

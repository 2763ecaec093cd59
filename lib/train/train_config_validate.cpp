// Checks each key against its declared rule (range, words: train_config_schema.cpp) and the
// cross-field rules (batch geometry, warmup, topology); enum keys hold only their table's values
// by type.
#include "train/train_config_validate.h"

#include <sstream>
#include <string>

#include "config/config_problems.h"
#include "train/train_config_schema.h"

namespace st {

namespace {

// dist.context_parallel against the world and the options it does not split (yet).
void check_context_parallel(const TrainConfig& c, int world_size, ConfigProblems& problems) {
  const int64_t parts = c.dist.context_parallel;
  if (parts <= 1) return;
  const std::string why = " with dist.context_parallel = " + std::to_string(parts) +
                          problems.where("dist.context_parallel");
  if (world_size > 0 && world_size % parts != 0) {
    problems.add("dist.context_parallel = " + std::to_string(parts) + problems.where("dist.context_parallel") +
                 " does not divide the " + std::to_string(world_size) + " ranks of this job");
  }
  problems.require(c.dist.sharding == Sharding::full || c.dist.sharding == Sharding::grad_op, "dist.sharding",
                   c.dist.sharding, "must be full or grad_op" + why + ": the parameters are sharded over every rank");
  problems.require(c.model.attention == AttentionPath::varlen, "model.attention", c.model.attention,
                   "must be varlen" + why + ": a rank's queries attend through spans over the group's keys");
  problems.require(c.eval.tasks.empty(), "eval.tasks", c.eval.tasks,
                   "must be empty" + why + ": benchmark tasks score whole sequences on each rank");
}

// dist.expert_parallel against the world and the sharding (the model's experts are checked
// when the model is read: run_setup.cpp).
void check_expert_parallel(const TrainConfig& c, int world_size, ConfigProblems& problems) {
  const int64_t parts = c.dist.expert_parallel;
  if (parts <= 1) return;
  const std::string why = " with dist.expert_parallel = " + std::to_string(parts) + problems.where("dist.expert_parallel");
  if (world_size > 0 && world_size % parts != 0) {
    problems.add("dist.expert_parallel = " + std::to_string(parts) + problems.where("dist.expert_parallel") +
                 " does not divide the " + std::to_string(world_size) + " ranks of this job");
  }
  problems.require(c.dist.sharding == Sharding::full || c.dist.sharding == Sharding::grad_op, "dist.sharding",
                   c.dist.sharding, "must be full or grad_op" + why + ": each expert's shards lie on the ranks "
                   "that hold that expert");
  problems.require(c.dist.context_parallel == 1, "dist.context_parallel", c.dist.context_parallel,
                   "must be 1" + why + ": a model with experts is not split along its rows yet");
}

}  // namespace

void validate_config(const TrainConfig& c, int world_ranks, const ConfigOrigins& origins) {
  ConfigProblems problems(origins);
  check_context_parallel(c, world_ranks, problems);
  check_expert_parallel(c, world_ranks, problems);
  problems.require(c.moe.aux_loss_coef >= 0.0 || c.moe.aux_loss_coef == MoeOptions::kModelsCoefficient,
                   "moe.aux_loss_coef", c.moe.aux_loss_coef, "must be >= 0, or -1 for the model's router_aux_loss_coef");
  // The batch geometry counts data-parallel ranks: a context group reads one batch.
  const int64_t parts = c.dist.context_parallel;
  const bool split = parts > 1 && world_ranks > 0 && world_ranks % parts == 0;
  const int world_size = split ? world_ranks / static_cast<int>(parts) : world_ranks;
  const char* ranks = split ? ") x data-parallel ranks(" : ") x ranks(";
  TrainConfig copy = c;
  ConfigSchema schema;
  bind_train_config(schema, copy);
  problems.add_all(schema.rule_violations(origins));

  problems.require(c.data.micro_batch_tokens != kAutoMicroBatchTokens || c.data.packing, "data.micro_batch_tokens",
                   c.data.micro_batch_tokens, "-1 (auto) sizes packed rows: set data.packing = true");

  const auto& t = c.train;
  if (world_size > 0 && t.global_batch > 0 && t.micro_batch > 0 && t.grad_accum == 0 &&
      t.global_batch % (t.micro_batch * world_size) != 0) {
    std::ostringstream line;
    line << "train.global_batch(" << t.global_batch << ")" << problems.where("train.global_batch")
         << " is not a multiple of train.micro_batch(" << t.micro_batch << ranks << world_size
         << "), so train.grad_accum = 0 (auto) has no whole value; change train.micro_batch or the rank count";
    problems.add(line.str());
  }
  if (world_size > 0 && t.global_batch > 0 && t.micro_batch > 0 && t.grad_accum > 0) {
    const int64_t product = t.micro_batch * t.grad_accum * world_size;
    if (product != t.global_batch) {
      std::ostringstream line;
      line << "train.micro_batch(" << t.micro_batch << ") x train.grad_accum(" << t.grad_accum
           << ranks << world_size << ") = " << product << " != train.global_batch("
           << t.global_batch << ")" << problems.where("train.global_batch") << "; both fixed, the run takes "
           << (t.global_batch % (t.micro_batch * t.grad_accum) == 0
                   ? std::to_string(t.global_batch / (t.micro_batch * t.grad_accum) * (split ? parts : 1)) + " ranks"
                   : std::string("no rank count"))
           << ": set train.grad_accum = 0 to derive it on any rank count, or train.global_batch = 0";
      problems.add(line.str());
    }
  }
  problems.require(t.max_steps > 0 || t.epochs > 0, "train.epochs", t.epochs,
                   "must be > 0 when train.max_steps is 0");
  problems.require(!t.output_dir.empty(), "train.output_dir", t.output_dir, "must not be empty");

  const auto& l = c.lora;
  try {
    lora_targets(l.target_modules);
  } catch (const ConfigError& error) {
    problems.add(std::string(error.what()) + problems.where("lora.target_modules"));
  }

  const auto& p = c.dpo;
  const std::string loss = enum_name(p.loss);
  problems.require(p.label_smoothing == 0.0 || p.loss == PreferenceLoss::sigmoid, "dpo.label_smoothing",
                   p.label_smoothing, "applies to dpo.loss = sigmoid only (dpo.loss = " + loss + ")");
  problems.require(p.nll_mean == NllMean::pair || p.ftx > 0.0 || p.loss == PreferenceLoss::orpo, "dpo.nll_mean",
                   p.nll_mean, "averages the NLL of dpo.ftx > 0 or dpo.loss = orpo, and this run has neither");
  const bool reference_free = p.loss == PreferenceLoss::simpo || p.loss == PreferenceLoss::orpo;
  problems.require(p.reference != ReferenceChoice::none || reference_free, "dpo.reference", p.reference,
                   "is only possible for dpo.loss = simpo|orpo; " + loss +
                       " compares with a reference model (use auto, online or precomputed)");
  problems.require(!reference_free || p.reference == ReferenceChoice::automatic || p.reference == ReferenceChoice::none,
                   "dpo.reference", p.reference, "must be auto or none: dpo.loss = " + loss + " uses no reference model");

  const auto& o = c.optim;
  problems.require(!(o.warmup_steps > 0 && o.warmup_ratio > 0.0), "optim.warmup_ratio",
                   o.warmup_ratio,
                   "conflicts with optim.warmup_steps = " + std::to_string(o.warmup_steps) +
                       problems.where("optim.warmup_steps") + "; set only one of them");

  if (o.step_in_backward) {
    const std::string why = " with optim.step_in_backward = true";
    problems.require(o.grad_clip == 0.0, "optim.grad_clip", o.grad_clip,
                     "must be 0" + why + ": a unit is updated before the gradients of the units below it "
                     "exist, so the global norm that clipping divides by is not known yet");
    const bool one_accumulation = t.grad_accum == 1 || (t.grad_accum == 0 && world_size > 0 && t.global_batch > 0 &&
                                                        t.global_batch == t.micro_batch * world_size);
    problems.require(one_accumulation, "train.grad_accum", t.grad_accum,
                     "must be 1" + why + ": the first micro-batch's update would come before the others' "
                     "gradients (raise train.micro_batch instead)");
    problems.require(c.data.micro_batch_tokens == 0, "data.micro_batch_tokens", c.data.micro_batch_tokens,
                     "must be 0" + why + ": a token budget can split a step's batch into several micro-batches");
    problems.require(t.dtype != ComputeDtype::fp16, "train.dtype", t.dtype,
                     "fp16 needs loss scaling, which checks every gradient for overflow before any update; "
                     "use bf16" + why);
  }

  const auto& d = c.dist;
  if (world_ranks > 0 && d.ranks_per_node > 0 && world_ranks % d.ranks_per_node != 0) {
    problems.add("dist.ranks_per_node = " + std::to_string(d.ranks_per_node) +
                 problems.where("dist.ranks_per_node") + " does not divide the " +
                 std::to_string(world_ranks) + " ranks of this job");
  }
  problems.throw_if_any();
}

}  // namespace st

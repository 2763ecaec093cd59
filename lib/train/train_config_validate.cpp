// Checks ranges, text choices and cross-field rules (batch geometry, warmup, topology); enum
// keys hold only their table's values by type.
#include "train/train_config_validate.h"

#include <algorithm>
#include <sstream>

#include "config/config_problems.h"
#include "train/train_config_schema.h"

namespace st {

void validate_config(const TrainConfig& c, int world_size, const ConfigOrigins& origins) {
  ConfigProblems problems(origins);
  TrainConfig copy = c;
  ConfigSchema schema;
  bind_train_config(schema, copy);
  for (const auto& field : schema.fields()) {
    if (field.choices.empty()) continue;
    const std::string value = field.current_value();
    const bool known =
        std::find(field.choices.begin(), field.choices.end(), value) != field.choices.end();
    std::string allowed;
    for (const auto& choice : field.choices) allowed += (allowed.empty() ? "" : "|") + choice;
    problems.require(known, field.name(), value, "is not one of " + allowed);
  }

  problems.require(c.model.logp_chunk_tokens > 0, "model.logp_chunk_tokens",
                   c.model.logp_chunk_tokens, "must be > 0");
  problems.require(c.data.val_size >= 0.0 && c.data.val_size < 1.0, "data.val_size",
                   c.data.val_size, "must be in [0, 1)");
  problems.require(c.data.cutoff_len >= 2, "data.cutoff_len", c.data.cutoff_len, "must be >= 2");
  problems.require(c.data.micro_batch_tokens >= kAutoMicroBatchTokens, "data.micro_batch_tokens",
                   c.data.micro_batch_tokens, "must be >= 0 (0 = by pair count) or -1 (auto)");
  problems.require(c.data.micro_batch_tokens != kAutoMicroBatchTokens || c.data.packing, "data.micro_batch_tokens",
                   c.data.micro_batch_tokens, "-1 (auto) sizes packed rows: set data.packing = true");
  problems.require(c.data.prefetch_steps >= 1, "data.prefetch_steps", c.data.prefetch_steps,
                   "must be >= 1");

  const auto& t = c.train;
  problems.require(t.micro_batch > 0, "train.micro_batch", t.micro_batch, "must be > 0");
  problems.require(t.grad_accum >= 0, "train.grad_accum", t.grad_accum, "must be >= 0 (0 = auto)");
  problems.require(t.global_batch >= 0, "train.global_batch", t.global_batch,
                   "must be >= 0 (0 = micro_batch x grad_accum x ranks)");
  if (world_size > 0 && t.global_batch > 0 && t.micro_batch > 0 && t.grad_accum == 0 &&
      t.global_batch % (t.micro_batch * world_size) != 0) {
    std::ostringstream line;
    line << "train.global_batch(" << t.global_batch << ")" << problems.where("train.global_batch")
         << " is not a multiple of train.micro_batch(" << t.micro_batch << ") x ranks(" << world_size
         << "), so train.grad_accum = 0 (auto) has no whole value; change train.micro_batch or the rank count";
    problems.add(line.str());
  }
  if (world_size > 0 && t.global_batch > 0 && t.micro_batch > 0 && t.grad_accum > 0) {
    const int64_t product = t.micro_batch * t.grad_accum * world_size;
    if (product != t.global_batch) {
      std::ostringstream line;
      line << "train.micro_batch(" << t.micro_batch << ") x train.grad_accum(" << t.grad_accum
           << ") x ranks(" << world_size << ") = " << product << " != train.global_batch("
           << t.global_batch << ")" << problems.where("train.global_batch")
           << "; change one of them or set train.global_batch = 0";
      problems.add(line.str());
    }
  }
  problems.require(t.max_steps >= 0, "train.max_steps", t.max_steps, "must be >= 0");
  problems.require(t.max_steps > 0 || t.epochs > 0, "train.epochs", t.epochs,
                   "must be > 0 when train.max_steps is 0");
  problems.require(!t.output_dir.empty(), "train.output_dir", t.output_dir, "must not be empty");
  problems.require(t.log_every > 0, "train.log_every", t.log_every, "must be > 0");
  problems.require(t.eval_every >= 0, "train.eval_every", t.eval_every, "must be >= 0");

  problems.require(t.peak_tflops >= 0.0, "train.peak_tflops", t.peak_tflops, "must be >= 0 (0 = auto)");

  const auto& l = c.lora;
  problems.require(l.r >= 1, "lora.r", l.r, "must be >= 1");
  problems.require(l.alpha > 0.0, "lora.alpha", l.alpha, "must be > 0");
  problems.require(l.dropout >= 0.0 && l.dropout < 1.0, "lora.dropout", l.dropout, "must be in [0, 1)");
  try {
    lora_targets(l.target_modules);
  } catch (const ConfigError& error) {
    problems.add(std::string(error.what()) + problems.where("lora.target_modules"));
  }

  const auto& p = c.dpo;
  problems.require(p.beta > 0.0, "dpo.beta", p.beta, "must be > 0");
  problems.require(p.label_smoothing >= 0.0 && p.label_smoothing < 0.5, "dpo.label_smoothing",
                   p.label_smoothing, "must be in [0, 0.5)");
  const std::string loss = enum_name(p.loss);
  problems.require(p.label_smoothing == 0.0 || p.loss == PreferenceLoss::sigmoid, "dpo.label_smoothing",
                   p.label_smoothing, "applies to dpo.loss = sigmoid only (dpo.loss = " + loss + ")");
  problems.require(p.ftx >= 0.0, "dpo.ftx", p.ftx, "must be >= 0");
  const bool reference_free = p.loss == PreferenceLoss::simpo || p.loss == PreferenceLoss::orpo;
  problems.require(p.reference != ReferenceChoice::none || reference_free, "dpo.reference", p.reference,
                   "is only possible for dpo.loss = simpo|orpo; " + loss +
                       " compares with a reference model (use auto, online or precomputed)");
  problems.require(!reference_free || p.reference == ReferenceChoice::automatic || p.reference == ReferenceChoice::none,
                   "dpo.reference", p.reference, "must be auto or none: dpo.loss = " + loss + " uses no reference model");

  const auto& o = c.optim;
  problems.require(o.lr > 0.0, "optim.lr", o.lr, "must be > 0");
  problems.require(o.beta1 >= 0.0 && o.beta1 < 1.0, "optim.beta1", o.beta1, "must be in [0, 1)");
  problems.require(o.beta2 >= 0.0 && o.beta2 < 1.0, "optim.beta2", o.beta2, "must be in [0, 1)");
  problems.require(o.eps > 0.0, "optim.eps", o.eps, "must be > 0");
  problems.require(o.weight_decay >= 0.0, "optim.weight_decay", o.weight_decay, "must be >= 0");
  problems.require(o.grad_clip >= 0.0, "optim.grad_clip", o.grad_clip, "must be >= 0 (0 = off)");
  problems.require(o.warmup_steps >= 0, "optim.warmup_steps", o.warmup_steps, "must be >= 0");
  problems.require(o.warmup_ratio >= 0.0 && o.warmup_ratio < 1.0, "optim.warmup_ratio",
                   o.warmup_ratio, "must be in [0, 1)");
  problems.require(!(o.warmup_steps > 0 && o.warmup_ratio > 0.0), "optim.warmup_ratio",
                   o.warmup_ratio,
                   "conflicts with optim.warmup_steps = " + std::to_string(o.warmup_steps) +
                       problems.where("optim.warmup_steps") + "; set only one of them");
  problems.require(o.min_lr_ratio >= 0.0 && o.min_lr_ratio <= 1.0, "optim.min_lr_ratio",
                   o.min_lr_ratio, "must be in [0, 1]");

  const auto& d = c.dist;
  problems.require(d.timeout_s > 0.0, "dist.timeout_s", d.timeout_s, "must be > 0 [s]");
  problems.require(d.ranks_per_node >= 0, "dist.ranks_per_node", d.ranks_per_node,
                   "must be >= 0 (0 = detect)");
  if (world_size > 0 && d.ranks_per_node > 0 && world_size % d.ranks_per_node != 0) {
    problems.add("dist.ranks_per_node = " + std::to_string(d.ranks_per_node) +
                 problems.where("dist.ranks_per_node") + " does not divide the " +
                 std::to_string(world_size) + " ranks of this job");
  }
  const auto& k = c.ckpt;
  problems.require(k.every >= 0, "ckpt.every", k.every, "must be >= 0 (0 = at the end only)");
  problems.require(k.keep_last >= 0, "ckpt.keep_last", k.keep_last, "must be >= 0 (0 = keep all)");
  problems.require(k.export_shard_gb > 0.0, "ckpt.export_shard_gb", k.export_shard_gb, "must be > 0 [GB]");
  problems.throw_if_any();
}

}  // namespace st

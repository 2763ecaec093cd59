// Hugging Face TrainingArguments, which LlamaFactory's and TRL's configs both extend, and the
// translator both vocabularies run.
#include "train/foreign_keys.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "hf/lora_target.h"
#include "util/errors.h"
#include "util/hub_id.h"
#include "util/text.h"

namespace st {

namespace {

bool holds_mapping(const std::string& key) {
  return key.size() > 7 && (ends_with(key, "_kwargs") || ends_with(key, "_config"));  // a name before the suffix
}

}  // namespace

bool ForeignTranslator::has(const std::string& key) const {
  const auto found = keys_.find(key);
  return found != keys_.end() && !found->second.null;
}

bool ForeignTranslator::truthy(const std::string& key) const {
  std::string lower = value(key);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower == "true" || lower == "1" || lower == "yes" || lower == "on";
}

void ForeignTranslator::set(const std::string& native, const std::string& value, const std::string& key) {
  out_.settings.push_back({native, value, keys_.at(key).origin + " (" + key + ")"});
}

void ForeignTranslator::derive(const std::string& native, const std::string& value, const std::string& why) {
  out_.settings.push_back({native, value, tool_ + ": " + why});
}

void ForeignTranslator::note(const std::string& key, const std::string& why) {
  out_.notes.push_back(keys_.at(key).origin + ": " + key + " = " + keys_.at(key).value + ": " + why);
}

void ForeignTranslator::refuse(const std::string& key, const std::string& why) {
  refusals_.push_back(keys_.at(key).origin + ": " + key + " = " + keys_.at(key).value + ": " + why);
}

std::vector<std::string> ForeignTranslator::children(const std::string& parent) const {
  std::vector<std::string> found;
  for (const auto& [key, setting] : keys_) {
    if (key.size() > parent.size() && key.compare(0, parent.size() + 1, parent + ".") == 0 && !setting.null) {
      found.push_back(key);
    }
  }
  return found;
}

void ForeignTranslator::apply_rows(const std::vector<ForeignKeyRow>& rows,
                                   const std::vector<std::string>& native_keys) {
  const std::vector<std::string> known = row_keys(rows);
  const auto row_of = [&](const std::string& key) {
    return std::find_if(rows.begin(), rows.end(), [&](const ForeignKeyRow& r) { return key == r.key; });
  };
  for (const auto& [key, setting] : keys_) {
    auto row = row_of(key);
    // A key inside a mapping (gradient_checkpointing_kwargs.use_reentrant) takes its parent's row:
    // noted or refused with it, or read by the vocabulary's code (mapped), which refuses the
    // children it does not read. Hugging Face's mappings are its *_kwargs and *_config keys; the
    // others hold one value.
    const size_t dot = key.find('.');
    if (row == rows.end() && dot != std::string::npos && row_of(key.substr(0, dot)) != rows.end()) {
      row = row_of(key.substr(0, dot));
      if (!holds_mapping(row->key)) {
        refusals_.push_back(setting.origin + ": " + key + ": " + row->key + " takes a value, not a mapping");
        continue;
      }
    }
    if (row == rows.end()) {
      std::string near = did_you_mean(key, known, "");
      if (near.empty()) near = did_you_mean(key, native_keys, "");
      refusals_.push_back(setting.origin + ": " + key + " is not a " + tool_ + " key shardtune reads." +
                          (near.empty() ? " shardtune's keys are listed by `shardtune train --help`." : near));
      continue;
    }
    if (setting.null) continue;  // the tool's default
    switch (row->fate) {
      case KeyFate::copied: set(row->native, setting.value, key); break;
      case KeyFate::noted: note(key, row->how); break;
      case KeyFate::refused:
        refuse(key, std::string(row->how) + (*row->native ? std::string(" (nearest: ") + row->native + ")" : ""));
        break;
      case KeyFate::mapped: break;
    }
  }
}

ForeignTranslation ForeignTranslator::finish() {
  if (!refusals_.empty()) {
    std::string text = "the config has keys shardtune cannot run as " + tool_ + " means them:";
    for (const std::string& line : refusals_) text += "\n  " + line;
    throw ConfigError(text);
  }
  return std::move(out_);
}

const std::vector<ForeignKeyRow>& training_argument_rows() {
  static const std::vector<ForeignKeyRow> rows = {
      {"output_dir", KeyFate::copied, "train.output_dir", ""},
      {"overwrite_output_dir", KeyFate::copied, "train.overwrite", ""},
      {"do_train", KeyFate::mapped, "", "true: train trains (false is refused: `shardtune eval` evaluates)"},
      {"do_eval", KeyFate::noted, "",
       "evaluation runs on the held-out data (data.val_size) every train.eval_every steps and at the end"},
      {"do_predict", KeyFate::refused, "", "prediction is `shardtune generate`"},
      {"learning_rate", KeyFate::copied, "optim.lr", ""},
      {"num_train_epochs", KeyFate::copied, "train.epochs", ""},
      {"max_steps", KeyFate::mapped, "train.max_steps", "-1 = 0 (run the epochs)"},
      {"per_device_train_batch_size", KeyFate::copied, "train.micro_batch", ""},
      {"gradient_accumulation_steps", KeyFate::copied, "train.grad_accum", ""},
      {"per_device_eval_batch_size", KeyFate::noted, "", "evaluation batches are train.micro_batch's size"},
      {"lr_scheduler_type", KeyFate::mapped, "optim.schedule",
       "linear | cosine | constant (no warmup, as Hugging Face's) | constant_with_warmup | cosine_with_min_lr"},
      {"warmup_steps", KeyFate::copied, "optim.warmup_steps", ""},
      {"warmup_ratio", KeyFate::copied, "optim.warmup_ratio", ""},
      {"max_grad_norm", KeyFate::copied, "optim.grad_clip", ""},
      {"weight_decay", KeyFate::copied, "optim.weight_decay", ""},
      {"adam_beta1", KeyFate::copied, "optim.beta1", ""},
      {"adam_beta2", KeyFate::copied, "optim.beta2", ""},
      {"adam_epsilon", KeyFate::copied, "optim.eps", ""},
      {"optim", KeyFate::mapped, "optim.name",
       "adamw_torch (and _fused, adamw_hf) = adamw; adamw_8bit, adamw_bnb_8bit, paged_adamw_8bit = adamw8bit"},
      {"seed", KeyFate::copied, "train.seed", ""},
      {"data_seed", KeyFate::copied, "train.seed", "the order of the data: train.seed"},
      {"bf16", KeyFate::mapped, "train.dtype", "true = bf16; false = fp32"},
      {"fp16", KeyFate::mapped, "train.dtype", "true = fp16 (with loss scaling; GPUs only)"},
      {"logging_steps", KeyFate::copied, "train.log_every", ""},
      {"logging_first_step", KeyFate::noted, "", "steps are logged every train.log_every and at the last"},
      {"save_steps", KeyFate::mapped, "ckpt.every", "with save_strategy steps"},
      {"save_strategy", KeyFate::mapped, "ckpt.every", "steps = save_steps; no = at the end only; epoch refused"},
      {"save_total_limit", KeyFate::copied, "ckpt.keep_last", ""},
      {"save_only_model", KeyFate::noted, "", "checkpoints always hold the optimizer, for an exact resume"},
      {"eval_strategy", KeyFate::mapped, "train.eval_every", "steps = eval_steps; no = at the end only; epoch refused"},
      {"evaluation_strategy", KeyFate::mapped, "train.eval_every", "as eval_strategy"},
      {"eval_steps", KeyFate::mapped, "train.eval_every", "with eval_strategy steps"},
      {"resume_from_checkpoint", KeyFate::copied, "train.resume", "a checkpoint path (null: start fresh)"},
      {"report_to", KeyFate::mapped, "train.tensorboard",
       "tensorboard (or all) = on, none = off; metrics.jsonl always; other services noted"},
      {"logging_dir", KeyFate::noted, "", "TensorBoard files go to <output_dir>/tensorboard"},
      {"run_name", KeyFate::noted, "", "the run is named by train.output_dir"},
      {"gradient_checkpointing", KeyFate::noted, "", "recomputation is train.recompute (auto sizes it to memory)"},
      {"gradient_checkpointing_kwargs", KeyFate::noted, "", "recomputation is train.recompute (auto sizes it to memory)"},
      {"ddp_timeout", KeyFate::noted, "", "each collective's deadline is dist.timeout_s; past it every rank aborts"},
      {"ddp_find_unused_parameters", KeyFate::noted, "", "no DDP here: sharding is dist.sharding"},
      {"dataloader_num_workers", KeyFate::noted, "", "batches are read ahead on a thread (data.prefetch_steps)"},
      {"include_num_input_tokens_seen", KeyFate::noted, "",
       "metrics.jsonl has each logged window's tokens (tokens) and tokens_per_s; the run's summary their sum"},
      {"deepspeed", KeyFate::mapped, "dist.sharding", "a ZeRO-3 config = full, ZeRO-2 = grad_op, ZeRO-0/1 = none"},
      {"fsdp", KeyFate::noted, "", "sharding is dist.sharding (full = FSDP's full_shard)"},
      {"push_to_hub", KeyFate::noted, "", "nothing is uploaded: the model is exported to <output_dir>/export"},
      {"hub_model_id", KeyFate::noted, "", "nothing is uploaded: the model is exported to <output_dir>/export"},
      {"torch_compile", KeyFate::noted, "", "shardtune's kernels are compiled C++ and CUDA"},
      {"use_liger_kernel", KeyFate::noted, "",
       "not needed: the log-probs are computed in chunks of tokens (model.logp_chunk_tokens), so the full logits "
       "never exist, as with Liger's fused linear cross-entropy; RMSNorm, SwiGLU and RoPE have their own kernels"},
      {"tf32", KeyFate::noted, "",
       "fp32 products run in full fp32 (libtorch's default, TF32 off); train.dtype = bf16 (bf16: true) computes in bf16"},
      {"lr_scheduler_kwargs", KeyFate::mapped, "optim.min_lr_ratio",
       "min_lr_rate = optim.min_lr_ratio, min_lr = its ratio to learning_rate (cosine_with_min_lr); others refused"},
      {"dataloader_drop_last", KeyFate::noted, "",
       "each epoch's last global batch is trained even when short (Hugging Face's false); with true it differs only "
       "there, by fewer than a global batch of pairs per epoch"},
      {"remove_unused_columns", KeyFate::noted, "", "prep reads only the columns of the record's shape"},
      {"disable_tqdm", KeyFate::noted, "", "the progress bar shows when stdout is a terminal (train --progress on|off)"},
      {"logging_strategy", KeyFate::mapped, "train.log_every",
       "steps = logging_steps; no: metrics.jsonl still gets every train.log_every's record; epoch refused"},
      {"use_cpu", KeyFate::noted, "", "each rank computes on its GPU where it has one, else on the CPU"},
      {"accelerator_config", KeyFate::noted, "", "no Accelerate here: the ranks are MPI's (launch.slurm)"},
      {"fsdp_config", KeyFate::noted, "", "sharding is dist.sharding (full = FSDP's full_shard)"},
  };
  return rows;
}

namespace {

// Which of bf16 / fp16 (and LlamaFactory's pure_bf16) wins: the first true, else fp32 where
// one is given false.
void translate_dtype(ForeignTranslator& t) {
  for (const char* key : {"pure_bf16", "bf16", "fp16"}) {
    if (t.has(key) && t.truthy(key)) {
      t.set("train.dtype", std::string(key) == "fp16" ? "fp16" : "bf16", key);
      return;
    }
  }
  for (const char* key : {"fp16", "pure_bf16", "bf16"}) {  // bf16 last: the one with defaults
    if (t.has(key)) {
      t.set("train.dtype", "fp32", key);
      return;
    }
  }
}

// A strategy key (eval_strategy, save_strategy) with its steps key: steps = every N steps, no =
// at the end only.
void translate_strategy(ForeignTranslator& t, const char* strategy, const char* steps, const char* native) {
  const std::string mode = t.has(strategy) ? t.value(strategy) : "steps";
  if (mode == "epoch") {
    t.refuse(strategy, std::string("by epoch is not offered: ") + native + " counts optimizer steps");
  } else if (mode == "no") {
    t.set(native, "0", strategy);
  } else if (mode != "steps") {
    t.refuse(strategy, "steps | no");
  } else if (t.has(steps)) {
    t.set(native, t.value(steps), steps);
  }
}

void translate_optimizer(ForeignTranslator& t) {
  if (t.has("lr_scheduler_type")) {
    const std::string& schedule = t.value("lr_scheduler_type");
    if (schedule == "constant_with_warmup") {
      t.set("optim.schedule", "constant", "lr_scheduler_type");
    } else if (schedule == "constant") {  // Hugging Face's constant schedule has no warmup
      t.set("optim.schedule", "constant", "lr_scheduler_type");
      t.derive("optim.warmup_steps", "0", "lr_scheduler_type constant has no warmup");
      t.derive("optim.warmup_ratio", "0", "lr_scheduler_type constant has no warmup");
    } else {
      t.set("optim.schedule", schedule, "lr_scheduler_type");
    }
  }
  if (t.has("optim")) {
    const std::string& name = t.value("optim");
    if (name == "adamw_torch" || name == "adamw_torch_fused" || name == "adamw_hf") {
      t.set("optim.name", "adamw", "optim");
    } else if (name == "adamw_8bit" || name == "adamw_bnb_8bit" || name == "paged_adamw_8bit") {
      t.set("optim.name", "adamw8bit", "optim");
    } else {
      t.refuse("optim", "optim.name is adamw (adamw_torch) | adamw8bit (adamw_8bit)");
    }
  }
}

// lr_scheduler_kwargs: the floor of cosine_with_min_lr, as a rate or an absolute learning rate.
void translate_schedule_arguments(ForeignTranslator& t) {
  for (const std::string& key : t.children("lr_scheduler_kwargs")) {
    const std::string name = key.substr(std::string("lr_scheduler_kwargs.").size());
    if (name == "min_lr_rate") {
      t.set("optim.min_lr_ratio", t.value(key), key);
    } else if (name == "min_lr" && t.has("learning_rate")) {
      try {
        t.set("optim.min_lr_ratio", std::to_string(std::stod(t.value(key)) / std::stod(t.value("learning_rate"))), key);
      } catch (const std::exception&) {
        t.refuse(key, "not a number");
      }
    } else if (name == "num_cycles" && t.value(key) == "0.5") {
      continue;  // half a cosine wave: the schedule's own
    } else {
      t.refuse(key, "not read: lr_scheduler_kwargs takes min_lr_rate or min_lr (optim.min_lr_ratio)");
    }
  }
}

// logging_strategy: steps (logging_steps), no (metrics are written all the same), epoch refused.
void translate_logging(ForeignTranslator& t) {
  if (!t.has("logging_strategy")) return;
  const std::string& mode = t.value("logging_strategy");
  if (mode == "epoch") {
    t.refuse("logging_strategy", "by epoch is not offered: train.log_every counts optimizer steps");
  } else if (mode == "no") {
    t.note("logging_strategy", "metrics.jsonl still gets a record every train.log_every steps (logging_steps)");
  } else if (mode != "steps") {
    t.refuse("logging_strategy", "steps | no");
  }
}

void translate_outputs(ForeignTranslator& t) {
  if (t.has("report_to")) {
    const std::string& to = t.value("report_to");
    const bool tensorboard = to.find("tensorboard") != std::string::npos || to == "all";
    t.set("train.tensorboard", tensorboard ? "true" : "false", "report_to");
    if (to != "none" && to != "tensorboard") {
      t.note("report_to", "metrics go to <output_dir>/metrics.jsonl" + std::string(tensorboard ? " and TensorBoard" : "") +
                              "; other services are not reported to");
    }
  }
  if (t.has("deepspeed")) {
    const std::string& file = t.value("deepspeed");
    std::string sharding = "full";
    if (file.find("z2") != std::string::npos || file.find("zero2") != std::string::npos) sharding = "grad_op";
    for (const char* stage : {"z0", "z1", "zero0", "zero1"}) {
      if (file.find(stage) != std::string::npos) sharding = "none";
    }
    t.set("dist.sharding", sharding, "deepspeed");
    t.note("deepspeed", "DeepSpeed is not run; its ZeRO stage, read from the file's name, is dist.sharding = " +
                            sharding + " (ZeRO-3 = full, offload is optim.offload)");
  }
}

}  // namespace

void translate_training_arguments(ForeignTranslator& t) {
  if (t.has("do_train") && !t.truthy("do_train")) {
    t.refuse("do_train", "train only trains; evaluate a model with `shardtune eval`");
  }
  translate_dtype(t);
  if (t.has("max_steps")) {
    const std::string& steps = t.value("max_steps");
    t.set("train.max_steps", steps == "-1" ? "0" : steps, "max_steps");
  }
  translate_optimizer(t);
  translate_schedule_arguments(t);
  translate_logging(t);
  translate_strategy(t, t.has("evaluation_strategy") ? "evaluation_strategy" : "eval_strategy", "eval_steps",
                     "train.eval_every");
  translate_strategy(t, "save_strategy", "save_steps", "ckpt.every");
  translate_outputs(t);
}

void check_local_model_path(ForeignTranslator& t, const std::string& key) {
  if (!t.has(key) || !looks_like_hub_id(t.value(key))) return;
  const std::string& id = t.value(key);
  t.refuse(key, hub_id_refusal(id) + ", then write " + key + ": " + hub_download_directory(id) +
                    " on this line (or give --" + key + " " + hub_download_directory(id) + ")");
}

std::string peft_target_modules(const std::string& value) {
  if (value == "all" || value == "all-linear") return kEveryLoraTarget;
  std::string out, item;
  std::istringstream in(value);
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" "));
    item.erase(item.find_last_not_of(" ") + 1);
    const std::string suffix = "_proj";
    if (item.size() > suffix.size() && ends_with(item, suffix)) {
      item.resize(item.size() - suffix.size());
    }
    out += (out.empty() ? "" : ",") + item;
  }
  return out;
}

std::vector<ForeignKeyRow> joined_rows(const std::vector<ForeignKeyRow>& base, const std::vector<ForeignKeyRow>& more) {
  std::vector<ForeignKeyRow> rows = base;
  rows.insert(rows.end(), more.begin(), more.end());
  return rows;
}

std::vector<std::string> row_keys(const std::vector<ForeignKeyRow>& rows) {
  std::vector<std::string> keys;
  for (const ForeignKeyRow& row : rows) keys.push_back(row.key);
  return keys;
}

std::vector<std::pair<std::string, std::string>> row_aliases(const std::vector<ForeignKeyRow>& rows) {
  std::vector<std::pair<std::string, std::string>> aliases;
  for (const ForeignKeyRow& row : rows) {
    if ((row.fate == KeyFate::copied || row.fate == KeyFate::mapped) && *row.native) aliases.emplace_back(row.key, row.native);
  }
  return aliases;
}

std::string markdown_rows(const std::vector<ForeignKeyRow>& rows, const std::string& tool) {
  const auto cell = [](const std::string& text) {  // a | inside a cell would end it
    std::string out;
    for (const char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  std::string text = "| " + tool + " key | shardtune key | how |\n|---|---|---|\n";
  for (const ForeignKeyRow& row : rows) {
    const char* fate = row.fate == KeyFate::noted ? "noted: " : row.fate == KeyFate::refused ? "refused: " : "";
    text += std::string("| `") + row.key + "` | " + (*row.native ? std::string("`") + row.native + "`" : "-") + " | " +
            fate + cell(row.how) + " |\n";
  }
  return text;
}

}  // namespace st

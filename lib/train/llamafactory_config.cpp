// LlamaFactory's training arguments (its hparams: ModelArguments, DataArguments,
// FinetuningArguments, and the Hugging Face TrainingArguments it extends) in shardtune's keys.
// Defaults are LlamaFactory's where they differ from shardtune's; each key's row says what it
// becomes, and a row without a plain target is translated by the code below the table.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <sstream>

#include "config/config_problems.h"
#include "train/foreign_config.h"
#include "util/errors.h"

namespace st {
namespace {

enum class Fate { mapped, noted, refused };

struct KeyRow {
  const char* key;
  Fate fate;
  const char* native;  // mapped: the shardtune key; refused: the nearest one ("" when none)
  const char* how;     // mapped: how the value is read ("" = as written); noted / refused: why
};

// LlamaFactory's keys this reads. Its other keys (PPO, GaLore, BAdam, multimodal, export ...) are
// unknown here: refused with the nearest key, as a misspelling is.
constexpr KeyRow kKeys[] = {
    // method
    {"stage", Fate::mapped, "train.stage", "sft | dpo | kto | rm; pt and ppo are refused"},
    {"do_train", Fate::mapped, "", "true: train trains (false is refused: shardtune eval evaluates)"},
    {"finetuning_type", Fate::mapped, "train.method", "full | lora (qlora with quantization_bit 4); freeze and oft refused"},
    {"quantization_bit", Fate::mapped, "train.method", "4 with lora = qlora (NF4, as bitsandbytes); others refused"},
    {"quantization_method", Fate::mapped, "lora.quant_type", "bnb = nf4 (with double quantization, as LlamaFactory)"},
    {"double_quantization", Fate::mapped, "lora.double_quant", ""},
    {"quantization_type", Fate::mapped, "lora.quant_type", "nf4 (fp4 refused)"},
    {"lora_rank", Fate::mapped, "lora.r", ""},
    {"lora_alpha", Fate::mapped, "lora.alpha", "default 2 x lora_rank, as LlamaFactory"},
    {"lora_dropout", Fate::mapped, "lora.dropout", ""},
    {"lora_target", Fate::mapped, "lora.target_modules", "all = every projection; q_proj,v_proj = q,v"},
    {"use_rslora", Fate::mapped, "lora.rslora", ""},
    {"pref_beta", Fate::mapped, "dpo.beta", "kto.beta for stage kto"},
    {"pref_ftx", Fate::mapped, "dpo.ftx", ""},
    {"pref_loss", Fate::mapped, "dpo.loss", "sigmoid | hinge | ipo | orpo | simpo (kto_pair refused: stage kto)"},
    {"dpo_label_smoothing", Fate::mapped, "dpo.label_smoothing", ""},
    {"simpo_gamma", Fate::mapped, "dpo.simpo_gamma", ""},
    {"kto_chosen_weight", Fate::mapped, "kto.desirable_weight", ""},
    {"kto_rejected_weight", Fate::mapped, "kto.undesirable_weight", ""},
    // model
    {"model_name_or_path", Fate::mapped, "model.path", "a local model directory (download hub models first)"},
    {"trust_remote_code", Fate::noted, "", "no remote code runs: the model's family must be one shardtune builds"},
    {"flash_attn", Fate::noted, "", "attention kernels are model.attention's choice (flash varlen on GPUs)"},
    {"use_unsloth", Fate::noted, "", "shardtune's own kernels run"},
    {"enable_liger_kernel", Fate::noted, "", "the log-probs are computed in chunks (model.logp_chunk_tokens), as Liger's fused loss"},
    {"use_liger_kernel", Fate::noted, "", "the log-probs are computed in chunks (model.logp_chunk_tokens), as Liger's fused loss"},
    {"disable_gradient_checkpointing", Fate::noted, "", "recomputation is train.recompute (auto sizes it to memory)"},
    {"gradient_checkpointing", Fate::noted, "", "recomputation is train.recompute (auto sizes it to memory)"},
    {"upcast_layernorm", Fate::noted, "", "norms are computed in fp32"},
    {"cache_dir", Fate::noted, "", "nothing is downloaded"},
    // data
    {"dataset", Fate::mapped, "prep.dataset", "prepped by train itself, cached in <output_dir>/data"},
    {"dataset_dir", Fate::mapped, "prep.dataset_dir", ""},
    {"template", Fate::mapped, "prep.template", "a built-in template of that name, else the model's own (auto)"},
    {"cutoff_len", Fate::mapped, "data.cutoff_len", ""},
    {"max_samples", Fate::mapped, "prep.max_samples", ""},
    {"val_size", Fate::mapped, "data.val_size", ""},
    {"packing", Fate::mapped, "data.packing", "each packed sequence attends only to itself (LlamaFactory's neat_packing)"},
    {"neat_packing", Fate::mapped, "data.packing", ""},
    {"mask_history", Fate::mapped, "prep.train_on", "true = last (only the final reply trains)"},
    {"enable_thinking", Fate::mapped, "prep.template_kwargs", "{\"enable_thinking\": ...} for the model's own template"},
    {"preprocessing_num_workers", Fate::noted, "", "prep runs on every rank, each its share of the records"},
    {"preprocessing_batch_size", Fate::noted, "", "prep runs on every rank, each its share of the records"},
    {"dataloader_num_workers", Fate::noted, "", "batches are read ahead on a thread (data.prefetch_steps)"},
    {"overwrite_cache", Fate::noted, "", "prepped data is reused only while its files and keys are unchanged"},
    {"tokenized_path", Fate::refused, "data.train", "prepped data is shardtune's own HDF5: prep it with shardtune prep"},
    {"eval_dataset", Fate::refused, "data.val", "prep it with `shardtune prep` and name it in data.val"},
    {"streaming", Fate::noted, "", "shards are read from disk as needed"},
    {"train_on_prompt", Fate::refused, "prep.train_on", "prompts never carry loss here"},
    // the Trainer
    {"output_dir", Fate::mapped, "train.output_dir", ""},
    {"overwrite_output_dir", Fate::mapped, "train.overwrite", ""},
    {"learning_rate", Fate::mapped, "optim.lr", ""},
    {"num_train_epochs", Fate::mapped, "train.epochs", ""},
    {"max_steps", Fate::mapped, "train.max_steps", "-1 = 0 (run the epochs)"},
    {"per_device_train_batch_size", Fate::mapped, "train.micro_batch", ""},
    {"gradient_accumulation_steps", Fate::mapped, "train.grad_accum", ""},
    {"per_device_eval_batch_size", Fate::noted, "", "evaluation batches are train.micro_batch's size"},
    {"lr_scheduler_type", Fate::mapped, "optim.schedule", "linear | cosine | constant | constant_with_warmup | cosine_with_min_lr"},
    {"warmup_steps", Fate::mapped, "optim.warmup_steps", ""},
    {"warmup_ratio", Fate::mapped, "optim.warmup_ratio", ""},
    {"max_grad_norm", Fate::mapped, "optim.grad_clip", ""},
    {"weight_decay", Fate::mapped, "optim.weight_decay", ""},
    {"adam_beta1", Fate::mapped, "optim.beta1", ""},
    {"adam_beta2", Fate::mapped, "optim.beta2", ""},
    {"adam_epsilon", Fate::mapped, "optim.eps", ""},
    {"optim", Fate::mapped, "optim.name", "adamw_torch (and _fused, adamw_hf) = adamw; adamw_8bit, adamw_bnb_8bit = adamw8bit"},
    {"seed", Fate::mapped, "train.seed", ""},
    {"bf16", Fate::mapped, "train.dtype", "true = bf16; neither bf16 nor fp16 = fp32, as LlamaFactory"},
    {"fp16", Fate::mapped, "train.dtype", "true = fp16 (with loss scaling)"},
    {"pure_bf16", Fate::mapped, "train.dtype", "true = bf16"},
    {"logging_steps", Fate::mapped, "train.log_every", ""},
    {"save_steps", Fate::mapped, "ckpt.every", ""},
    {"save_strategy", Fate::mapped, "ckpt.every", "steps = save_steps; no = at the end only; epoch refused"},
    {"save_total_limit", Fate::mapped, "ckpt.keep_last", ""},
    {"save_only_model", Fate::noted, "", "checkpoints always hold the optimizer, for an exact resume"},
    {"eval_strategy", Fate::mapped, "train.eval_every", "steps = eval_steps; no = at the end only; epoch refused"},
    {"evaluation_strategy", Fate::mapped, "train.eval_every", "as eval_strategy"},
    {"eval_steps", Fate::mapped, "train.eval_every", "with eval_strategy steps"},
    {"resume_from_checkpoint", Fate::mapped, "train.resume", "a checkpoint path (null: start fresh)"},
    {"report_to", Fate::mapped, "train.tensorboard", "tensorboard = on, none = off; metrics.jsonl always; wandb and others noted"},
    {"logging_dir", Fate::noted, "", "TensorBoard files go to <output_dir>/tensorboard"},
    {"run_name", Fate::noted, "", "the run is named by train.output_dir"},
    {"plot_loss", Fate::noted, "", "`shardtune plot <output_dir>/metrics.jsonl` draws the curves"},
    {"ddp_timeout", Fate::noted, "", "each collective's deadline is dist.timeout_s; past it every rank aborts"},
    {"include_num_input_tokens_seen", Fate::noted, "", "metrics.jsonl counts the tokens seen"},
    {"deepspeed", Fate::mapped, "dist.sharding", "a ZeRO-3 config = full, ZeRO-2 = grad_op, ZeRO-0/1 = none"},
    {"fsdp", Fate::noted, "", "sharding is dist.sharding (full = FSDP's full_shard)"},
    {"ddp_find_unused_parameters", Fate::noted, "", "no DDP here"},
    {"ref_model", Fate::refused, "dpo.reference", "the reference is the model being trained, at its start"},
    {"use_dora", Fate::refused, "train.method", "DoRA is not trained here: lora or qlora"},
    {"pissa_init", Fate::refused, "lora.seed", "adapters start as PEFT's default (A random, B zero)"},
    {"use_galore", Fate::refused, "optim.name", "the optimizers are adamw and adamw8bit"},
    {"use_badam", Fate::refused, "optim.name", "the optimizers are adamw and adamw8bit"},
    {"use_apollo", Fate::refused, "optim.name", "the optimizers are adamw and adamw8bit"},
    {"do_eval", Fate::noted, "", "evaluation runs on the held-out data (data.val_size) every train.eval_every steps and at the end"},
    {"do_predict", Fate::refused, "", "prediction is `shardtune generate`"},
};

const KeyRow* find_row(const std::string& key) {
  for (const KeyRow& row : kKeys) {
    if (key == row.key) return &row;
  }
  return nullptr;
}

// LlamaFactory's defaults where they differ from shardtune's, as if written.
const std::pair<const char*, const char*> kDefaults[] = {
    {"stage", "sft"},
    {"finetuning_type", "lora"},
    {"dataset_dir", "data"},
    {"cutoff_len", "2048"},
    {"learning_rate", "5e-05"},
    {"num_train_epochs", "3.0"},
    {"per_device_train_batch_size", "8"},
    {"gradient_accumulation_steps", "1"},
    {"lr_scheduler_type", "linear"},
    {"logging_steps", "500"},
    {"save_steps", "500"},
    {"lora_rank", "8"},
    {"lora_target", "all"},
    {"bf16", "false"},
};

// The built-in templates with LlamaFactory's template names.
const std::pair<const char*, const char*> kTemplates[] = {
    {"llama3", "llama3"}, {"llama2", "llama2"},          {"qwen", "qwen"},       {"qwen3", "qwen3"},
    {"qwen3_nothink", "qwen3_nothink"}, {"mistral", "mistral"}, {"chatml", "chatml"}, {"empty", "plain"},
};

bool truthy(const std::string& value) {
  std::string lower = value;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower == "true" || lower == "1" || lower == "yes" || lower == "on";
}

class Translator {
 public:
  explicit Translator(std::map<std::string, ForeignSetting> keys) : keys_(std::move(keys)) {}

  bool has(const std::string& key) const { return keys_.count(key) && !keys_.at(key).null; }
  const std::string& value(const std::string& key) const { return keys_.at(key).value; }

  // `native` = `value`, from `key`.
  void set(const std::string& native, const std::string& value, const std::string& key) {
    const ForeignSetting& from = keys_.at(key);
    out_.settings.push_back({native, value, from.origin + " (" + key + ")"});
  }
  void derive(const std::string& native, const std::string& value, const std::string& why) {
    out_.settings.push_back({native, value, "LlamaFactory: " + why});
  }
  void note(const std::string& key, const std::string& why) {
    out_.notes.push_back(keys_.at(key).origin + ": " + key + " = " + keys_.at(key).value + ": " + why);
  }
  void refuse(const std::string& key, const std::string& why) {
    refusals_.push_back(keys_.at(key).origin + ": " + key + " = " + keys_.at(key).value + ": " + why);
  }
  void unknown(const std::string& key, const std::string& hint) {
    refusals_.push_back(keys_.at(key).origin + ": " + key + " is not a LlamaFactory key shardtune reads." + hint);
  }

  ForeignTranslation finish() {
    if (!refusals_.empty()) {
      std::string text = "the config has keys shardtune cannot run as LlamaFactory means them:";
      for (const std::string& line : refusals_) text += "\n  " + line;
      throw ConfigError(text);
    }
    return std::move(out_);
  }

 private:
  std::map<std::string, ForeignSetting> keys_;
  ForeignTranslation out_;
  std::vector<std::string> refusals_;
};

std::string lora_targets(const std::string& value) {
  if (value == "all") return "q,k,v,o,gate,up,down";
  std::string out, item;
  std::istringstream in(value);
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" "));
    item.erase(item.find_last_not_of(" ") + 1);
    const std::string suffix = "_proj";
    if (item.size() > suffix.size() && item.compare(item.size() - suffix.size(), suffix.size(), suffix) == 0) {
      item.resize(item.size() - suffix.size());
    }
    out += (out.empty() ? "" : ",") + item;
  }
  return out;
}

void translate_method(Translator& t) {
  if (t.has("stage")) {
    const std::string& stage = t.value("stage");
    if (stage == "pt" || stage == "ppo") {
      t.refuse("stage", "pretraining on raw text (pt) and PPO are not trained here; train.stage is sft | dpo | kto | rm");
    } else {
      t.set("train.stage", stage, "stage");
    }
  }
  if (t.has("do_train") && !truthy(t.value("do_train"))) {
    t.refuse("do_train", "train only trains; evaluate a model with `shardtune eval`");
  }
  if (t.has("finetuning_type")) {
    const std::string& type = t.value("finetuning_type");
    const bool quantized = t.has("quantization_bit");
    if (type == "full" || type == "lora") {
      const bool qlora = type == "lora" && quantized && t.value("quantization_bit") == "4";
      t.set("train.method", qlora ? "qlora" : type, "finetuning_type");
    } else {
      t.refuse("finetuning_type", "freeze and oft are not trained here; train.method is full | lora | qlora");
    }
  }
  if (t.has("quantization_bit")) {
    if (t.value("quantization_bit") != "4" || !t.has("finetuning_type") || t.value("finetuning_type") != "lora") {
      t.refuse("quantization_bit", "only 4-bit (NF4) bases with lora adapters are trained: train.method = qlora");
    }
    if (t.has("quantization_method") && t.value("quantization_method") != "bnb") {
      t.refuse("quantization_method", "the 4-bit base is bitsandbytes' NF4 (bnb); lora.quant_type = nf4");
    }
  }
  if (t.has("quantization_type") && t.value("quantization_type") != "nf4") {
    t.refuse("quantization_type", "the 4-bit base is NF4; lora.quant_type = nf4");
  }
  if (t.has("double_quantization")) t.set("lora.double_quant", t.value("double_quantization"), "double_quantization");
  if (t.has("lora_rank")) t.set("lora.r", t.value("lora_rank"), "lora_rank");
  if (t.has("lora_alpha")) {
    t.set("lora.alpha", t.value("lora_alpha"), "lora_alpha");
  } else if (t.has("lora_rank")) {
    char* end = nullptr;
    const long long rank = std::strtoll(t.value("lora_rank").c_str(), &end, 10);
    if (end && *end == '\0' && rank > 0) t.derive("lora.alpha", std::to_string(2 * rank), "lora_alpha = 2 x lora_rank");
  }
  if (t.has("lora_target")) t.set("lora.target_modules", lora_targets(t.value("lora_target")), "lora_target");
  const bool kto = t.has("stage") && t.value("stage") == "kto";
  if (t.has("pref_beta")) t.set(kto ? "kto.beta" : "dpo.beta", t.value("pref_beta"), "pref_beta");
  if (t.has("pref_loss")) {
    if (t.value("pref_loss") == "kto_pair") {
      t.refuse("pref_loss", "kto_pair is not trained here; KTO is train.stage = kto");
    } else {
      t.set("dpo.loss", t.value("pref_loss"), "pref_loss");
    }
  }
}

void translate_data(Translator& t) {
  if (t.has("template")) {
    std::string chosen = kAutomaticWord;
    for (const auto& [name, builtin] : kTemplates) {
      if (t.value("template") == name) chosen = builtin;
    }
    if (chosen == kAutomaticWord) {
      t.note("template", "no built-in template of that name: prep.template = auto renders the model's own chat "
                         "template (tokenizer_config.json), which LlamaFactory's templates follow");
    }
    t.set("prep.template", chosen, "template");
  }
  if (t.has("packing") && truthy(t.value("packing"))) {
    t.note("packing", "packed sequences attend only to themselves here (LlamaFactory's neat_packing); the losses "
                      "equal unpacked training's");
  }
  for (const char* key : {"packing", "neat_packing"}) {
    if (t.has(key) && truthy(t.value(key))) t.set("data.packing", "true", key);
  }
  if (t.has("mask_history")) t.set("prep.train_on", truthy(t.value("mask_history")) ? "last" : "all", "mask_history");
  if (t.has("enable_thinking")) {
    t.set("prep.template_kwargs", std::string("{\"enable_thinking\": ") + (truthy(t.value("enable_thinking")) ? "true" : "false") + "}",
          "enable_thinking");
  }
}

// Which of the keys given with one meaning (fp16, bf16, pure_bf16) wins: LlamaFactory trains in
// fp32 unless one is true.
void translate_dtype(Translator& t) {
  for (const char* key : {"pure_bf16", "bf16", "fp16"}) {
    if (t.has(key) && truthy(t.value(key))) {
      t.set("train.dtype", std::string(key) == "fp16" ? "fp16" : "bf16", key);
      return;
    }
  }
  for (const char* key : {"fp16", "pure_bf16", "bf16"}) {  // bf16 last: the one with a default
    if (t.has(key)) {
      t.set("train.dtype", "fp32", key);
      return;
    }
  }
}

// A strategy key (eval_strategy, save_strategy) with its steps key: steps = every N steps, no =
// at the end only.
void translate_strategy(Translator& t, const char* strategy, const char* steps, const char* native) {
  const bool has_strategy = t.has(strategy);
  const std::string mode = has_strategy ? t.value(strategy) : "steps";
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

void translate_trainer(Translator& t) {
  translate_dtype(t);
  if (t.has("max_steps")) {
    const std::string& steps = t.value("max_steps");
    t.set("train.max_steps", steps == "-1" ? "0" : steps, "max_steps");
  }
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
  translate_strategy(t, t.has("evaluation_strategy") ? "evaluation_strategy" : "eval_strategy", "eval_steps",
                     "train.eval_every");
  translate_strategy(t, "save_strategy", "save_steps", "ckpt.every");
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
    if (file.find("z0") != std::string::npos || file.find("z1") != std::string::npos ||
        file.find("zero0") != std::string::npos || file.find("zero1") != std::string::npos) {
      sharding = "none";
    }
    t.set("dist.sharding", sharding, "deepspeed");
    t.note("deepspeed", "DeepSpeed is not run; its ZeRO stage, read from the file's name, is dist.sharding = " +
                            sharding + " (ZeRO-3 = full, offload is optim.offload)");
  }
}

}  // namespace

bool is_llamafactory_key(const std::string& key) { return find_row(key) != nullptr; }

std::vector<std::string> llamafactory_keys() {
  std::vector<std::string> keys;
  for (const KeyRow& row : kKeys) keys.push_back(row.key);
  return keys;
}

std::string llamafactory_alias(const std::string& key) {
  const KeyRow* row = find_row(key);
  if (!row || row->fate != Fate::mapped || *row->native == '\0') return "";
  return std::string(key) + " is LlamaFactory's name for " + row->native;
}

ForeignTranslation translate_llamafactory(const std::vector<ForeignSetting>& given, bool with_defaults,
                                          const std::vector<std::string>& native_keys) {
  std::map<std::string, ForeignSetting> keys;
  if (with_defaults) {
    for (const auto& [key, value] : kDefaults) keys[key] = {key, value, "LlamaFactory's default", false};
  }
  for (const ForeignSetting& setting : given) keys[setting.key] = setting;  // later sources win
  Translator t(keys);

  const std::vector<std::string> known = llamafactory_keys();
  // Plain rows: the value as written; the rest are translated below.
  const std::vector<std::string> plain = {"model_name_or_path", "dataset", "dataset_dir", "cutoff_len", "max_samples",
                                          "val_size", "output_dir", "overwrite_output_dir", "learning_rate",
                                          "num_train_epochs", "per_device_train_batch_size",
                                          "gradient_accumulation_steps", "warmup_steps", "warmup_ratio",
                                          "max_grad_norm", "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon",
                                          "seed", "logging_steps", "save_total_limit", "resume_from_checkpoint",
                                          "pref_ftx", "dpo_label_smoothing", "simpo_gamma", "kto_chosen_weight",
                                          "kto_rejected_weight", "use_rslora"};
  for (const auto& [key, setting] : keys) {
    const KeyRow* row = find_row(key);
    if (!row) {
      std::string near = did_you_mean(key, known, "");
      if (near.empty()) near = did_you_mean(key, native_keys, "");
      t.unknown(key, near.empty() ? " shardtune's keys are listed by `shardtune train --help`." : near);
      continue;
    }
    if (setting.null) continue;  // LlamaFactory's default
    if (row->fate == Fate::noted) t.note(key, row->how);
    if (row->fate == Fate::refused) {
      t.refuse(key, std::string(row->how) + (*row->native ? std::string(" (nearest: ") + row->native + ")" : ""));
    }
    if (std::find(plain.begin(), plain.end(), key) != plain.end()) t.set(row->native, setting.value, key);
  }
  translate_method(t);
  translate_data(t);
  translate_trainer(t);
  if (with_defaults) t.derive("ckpt.export", "true", "the trained model is saved at the end (<output_dir>/export)");
  return t.finish();
}

std::string llamafactory_key_table() {
  std::string text = "| LlamaFactory key | shardtune | how |\n|---|---|---|\n";
  for (const KeyRow& row : kKeys) {
    const char* fate = row.fate == Fate::mapped ? "" : row.fate == Fate::noted ? "noted: " : "refused: ";
    text += std::string("| ") + row.key + " | " + (*row.native ? row.native : "-") + " | " + fate + row.how + " |\n";
  }
  return text;
}

}  // namespace st

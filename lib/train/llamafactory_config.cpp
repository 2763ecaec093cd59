// LlamaFactory's training arguments (its hparams: ModelArguments, DataArguments,
// FinetuningArguments, and the Hugging Face TrainingArguments it extends) in shardtune's keys.
// Defaults are LlamaFactory's where they differ from shardtune's; each key's row says what it
// becomes, and a mapped row is translated by the code below the table.
#include <algorithm>
#include <cstdlib>
#include <map>

#include "tokenizer/chat_template.h"
#include "train/foreign_keys.h"

namespace st {
namespace {

// LlamaFactory's own keys; Hugging Face's TrainingArguments (foreign_keys.cpp) join them. Its
// other keys (PPO, GaLore, BAdam, multimodal, export ...) are unknown here: refused with the
// nearest key, as a misspelling is.
const std::vector<ForeignKeyRow>& own_rows() {
  static const std::vector<ForeignKeyRow> rows = {
      // method
      {"stage", KeyFate::mapped, "train.stage", "sft | dpo | kto | rm; pt and ppo are refused"},
      {"finetuning_type", KeyFate::mapped, "train.method", "full | lora (qlora with quantization_bit 4); freeze and oft refused"},
      {"quantization_bit", KeyFate::mapped, "train.method", "4 with lora = qlora (NF4, as bitsandbytes); others refused"},
      {"quantization_method", KeyFate::mapped, "lora.quant_type", "bnb = nf4 (hqq, eetq refused)"},
      {"double_quantization", KeyFate::copied, "lora.double_quant", ""},
      {"quantization_type", KeyFate::mapped, "lora.quant_type", "nf4 (fp4 refused)"},
      {"lora_rank", KeyFate::copied, "lora.r", ""},
      {"lora_alpha", KeyFate::copied, "lora.alpha", "default 2 x lora_rank, as LlamaFactory"},
      {"lora_dropout", KeyFate::copied, "lora.dropout", ""},
      {"lora_target", KeyFate::mapped, "lora.target_modules", "all = every projection; q_proj,v_proj = q,v"},
      {"use_rslora", KeyFate::copied, "lora.rslora", ""},
      {"pref_beta", KeyFate::mapped, "dpo.beta", "kto.beta for stage kto"},
      {"pref_ftx", KeyFate::copied, "dpo.ftx", ""},
      {"pref_loss", KeyFate::mapped, "dpo.loss", "sigmoid | hinge | ipo | orpo | simpo (kto_pair refused: stage kto)"},
      {"dpo_label_smoothing", KeyFate::copied, "dpo.label_smoothing", ""},
      {"simpo_gamma", KeyFate::copied, "dpo.simpo_gamma", ""},
      {"kto_chosen_weight", KeyFate::copied, "kto.desirable_weight", ""},
      {"kto_rejected_weight", KeyFate::copied, "kto.undesirable_weight", ""},
      {"pure_bf16", KeyFate::mapped, "train.dtype", "true = bf16"},
      {"ref_model", KeyFate::refused, "dpo.reference", "the reference is the model being trained, at its start"},
      {"use_dora", KeyFate::refused, "train.method", "DoRA is not trained here: lora or qlora"},
      {"pissa_init", KeyFate::refused, "lora.seed", "adapters start as PEFT's default (A random, B zero)"},
      {"use_galore", KeyFate::refused, "optim.name", "the optimizers are adamw and adamw8bit"},
      {"use_badam", KeyFate::refused, "optim.name", "the optimizers are adamw and adamw8bit"},
      {"use_apollo", KeyFate::refused, "optim.name", "the optimizers are adamw and adamw8bit"},
      // model
      {"model_name_or_path", KeyFate::copied, "model.path",
       "a local model directory (a hub id is refused with its `hf download` command)"},
      {"trust_remote_code", KeyFate::noted, "", "no remote code runs: the model's family must be one shardtune builds"},
      {"flash_attn", KeyFate::noted, "", "attention kernels are model.attention's choice (flash varlen on GPUs)"},
      {"use_unsloth", KeyFate::noted, "", "shardtune's own kernels run"},
      {"enable_liger_kernel", KeyFate::noted, "", "the log-probs are computed in chunks (model.logp_chunk_tokens), as Liger's fused loss"},
      {"disable_gradient_checkpointing", KeyFate::noted, "", "recomputation is train.recompute (auto sizes it to memory)"},
      {"upcast_layernorm", KeyFate::noted, "", "norms are computed in fp32"},
      {"cache_dir", KeyFate::noted, "", "nothing is downloaded"},
      {"plot_loss", KeyFate::noted, "", "`shardtune plot <output_dir>/metrics.jsonl` draws the curves"},
      // data
      {"dataset", KeyFate::copied, "prep.dataset", "prepped by train itself, cached in <output_dir>/data"},
      {"dataset_dir", KeyFate::copied, "prep.dataset_dir", ""},
      {"template", KeyFate::mapped, "prep.template", "a built-in template of that name, else the model's own (auto)"},
      {"cutoff_len", KeyFate::copied, "data.cutoff_len", ""},
      {"max_samples", KeyFate::copied, "prep.max_samples", ""},
      {"val_size", KeyFate::copied, "data.val_size", ""},
      {"packing", KeyFate::mapped, "data.packing", "each packed sequence attends only to itself (LlamaFactory's neat_packing)"},
      {"neat_packing", KeyFate::mapped, "data.packing", ""},
      {"mask_history", KeyFate::mapped, "prep.train_on", "true = last (only the final reply trains)"},
      {"enable_thinking", KeyFate::mapped, "prep.template_kwargs", "{\"enable_thinking\": ...} for the model's own template"},
      {"preprocessing_num_workers", KeyFate::noted, "", "prep runs on every rank, each its share of the records"},
      {"preprocessing_batch_size", KeyFate::noted, "", "prep runs on every rank, each its share of the records"},
      {"overwrite_cache", KeyFate::noted, "", "prepped data is reused only while its files and keys are unchanged"},
      {"tokenized_path", KeyFate::refused, "data.train", "prepped data is shardtune's own HDF5: prep it with shardtune prep"},
      {"eval_dataset", KeyFate::refused, "data.val", "prep it with `shardtune prep` and name it in data.val"},
      {"streaming", KeyFate::noted, "", "shards are read from disk as needed"},
      {"train_on_prompt", KeyFate::refused, "prep.train_on", "prompts never carry loss here"},
  };
  return rows;
}

const std::vector<ForeignKeyRow>& all_rows() {
  static const std::vector<ForeignKeyRow> rows = joined_rows(own_rows(), training_argument_rows());
  return rows;
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

void translate_method(ForeignTranslator& t) {
  if (t.has("stage")) {
    const std::string& stage = t.value("stage");
    if (stage == "pt" || stage == "ppo") {
      t.refuse("stage", "pretraining on raw text (pt) and PPO are not trained here; train.stage is sft | dpo | kto | rm");
    } else {
      t.set("train.stage", stage, "stage");
    }
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
  if (!t.has("lora_alpha") && t.has("lora_rank")) {
    char* end = nullptr;
    const long long rank = std::strtoll(t.value("lora_rank").c_str(), &end, 10);
    if (end && *end == '\0' && rank > 0) t.derive("lora.alpha", std::to_string(2 * rank), "lora_alpha = 2 x lora_rank");
  }
  if (t.has("lora_target")) t.set("lora.target_modules", peft_target_modules(t.value("lora_target")), "lora_target");
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

void translate_data(ForeignTranslator& t) {
  if (t.has("template")) {
    // LlamaFactory names its templates as shardtune's built-in ones are named; its `empty` is plain.
    const std::string& name = t.value("template");
    TemplateKind builtin{};
    std::string chosen = kAutomaticWord;
    if (name == "empty") chosen = enum_name(TemplateKind::plain);
    if (name != enum_name(TemplateKind::jinja) && find_enum(name, builtin)) chosen = enum_name(builtin);
    if (chosen == kAutomaticWord) {
      t.note("template", "no built-in template of that name: prep.template = auto renders the model's own chat "
                         "template (tokenizer_config.json), which LlamaFactory's templates follow");
    }
    t.set("prep.template", chosen, "template");
  }
  if (t.has("packing") && t.truthy("packing")) {
    t.note("packing", "packed sequences attend only to themselves here (LlamaFactory's neat_packing); the losses "
                      "equal unpacked training's");
  }
  for (const char* key : {"packing", "neat_packing"}) {
    if (t.has(key) && t.truthy(key)) t.set("data.packing", "true", key);
  }
  if (t.has("mask_history")) t.set("prep.train_on", t.truthy("mask_history") ? "last" : "all", "mask_history");
  if (t.has("enable_thinking")) {
    t.set("prep.template_kwargs", std::string("{\"enable_thinking\": ") + (t.truthy("enable_thinking") ? "true" : "false") + "}",
          "enable_thinking");
  }
}

}  // namespace

bool is_llamafactory_key(const std::string& key) {
  const std::vector<std::string> keys = llamafactory_keys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

std::vector<std::string> llamafactory_keys() { return row_keys(all_rows()); }

ForeignTranslation translate_llamafactory(const std::vector<ForeignSetting>& given, bool with_defaults,
                                          const std::vector<std::string>& native_keys) {
  std::map<std::string, ForeignSetting> keys;
  if (with_defaults) {
    for (const auto& [key, value] : kDefaults) keys[key] = {key, value, "LlamaFactory's default", false};
  }
  for (const ForeignSetting& setting : given) keys[setting.key] = setting;  // later sources win
  ForeignTranslator t("LlamaFactory", keys);
  t.apply_rows(all_rows(), native_keys);
  translate_method(t);
  check_local_model_path(t);
  translate_data(t);
  translate_training_arguments(t);
  if (with_defaults) t.derive("ckpt.export", "true", "the trained model is saved at the end (<output_dir>/export)");
  return t.finish();
}

std::string llamafactory_key_table() { return markdown_rows(all_rows(), "LlamaFactory"); }

void add_foreign_aliases(ConfigSchema& schema) {
  const auto llamafactory = row_aliases(all_rows());
  const auto trl = trl_aliases();
  for (const auto& [key, native] : llamafactory) {
    const bool both = std::find(trl.begin(), trl.end(), std::make_pair(key, native)) != trl.end();
    schema.alias(key, native, both ? "LlamaFactory's and TRL's" : "LlamaFactory's");
  }
  for (const auto& [key, native] : trl) {
    if (std::find(llamafactory.begin(), llamafactory.end(), std::make_pair(key, native)) == llamafactory.end()) {
      schema.alias(key, native, "TRL's");
    }
  }
}

}  // namespace st

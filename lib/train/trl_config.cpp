// TRL's configs (`trl sft|dpo|kto|reward|grpo|rloo --config x.yaml`): ScriptArguments, ModelConfig
// and the trainer's config (SFTConfig, DPOConfig, KTOConfig, RewardConfig, GRPOConfig, RLOOConfig,
// all extending Hugging Face's TrainingArguments) in shardtune's keys, with TRL's defaults where
// they differ from shardtune's. RLOOConfig shares GRPOConfig's rollout keys: the rows name grpo.*,
// and an rloo config's land in rloo.* (rloo_options.h), the same keys with RLOOConfig's defaults.
#include <cstdlib>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "hf/model_config.h"
#include "train/foreign_keys.h"
#include "util/hub_id.h"
#include "util/text.h"

namespace st {
namespace {

namespace fs = std::filesystem;

const std::vector<ForeignKeyRow>& own_rows() {
  static const std::vector<ForeignKeyRow> rows = {
      // ScriptArguments
      {"dataset_name", KeyFate::mapped, "prep.dataset",
       "a local JSON or JSONL file, or a folder holding <dataset_train_split>.jsonl (.json); prepped by train"},
      {"dataset_config", KeyFate::refused, "prep.dataset", "hub dataset configs are not downloaded: name a local file"},
      {"dataset_train_split", KeyFate::mapped, "prep.dataset", "the file <split>.jsonl (.json) of a dataset_name folder"},
      {"dataset_test_split", KeyFate::noted, "", "evaluation data is held out of the training file (data.val_size)"},
      {"dataset_streaming", KeyFate::noted, "", "shards are read from disk as needed"},
      {"ignore_bias_buffers", KeyFate::noted, "", "no DDP here"},
      {"gradient_checkpointing_use_reentrant", KeyFate::noted, "", "recomputation is train.recompute"},
      {"env", KeyFate::noted, "", "set environment variables in the job (launch.slurm passes the job's to every rank)"},
      // ModelConfig
      {"model_name_or_path", KeyFate::copied, "model.path",
       "a local model directory (a hub id is refused with its `hf download` command)"},
      {"model_revision", KeyFate::noted, "", "the model directory is read as it is"},
      {"dtype", KeyFate::noted, "", "weights train as fp32 masters; the compute dtype is train.dtype (bf16 / fp16 keys)"},
      {"torch_dtype", KeyFate::noted, "", "weights train as fp32 masters; the compute dtype is train.dtype (bf16 / fp16 keys)"},
      {"trust_remote_code", KeyFate::noted, "", "no remote code runs: the model's family must be one shardtune builds"},
      {"attn_implementation", KeyFate::noted, "", "attention kernels are model.attention's choice (flash varlen on GPUs)"},
      {"use_peft", KeyFate::mapped, "train.method", "true = lora (qlora with load_in_4bit)"},
      {"lora_r", KeyFate::copied, "lora.r", ""},
      {"lora_alpha", KeyFate::copied, "lora.alpha", ""},
      {"lora_dropout", KeyFate::copied, "lora.dropout", ""},
      {"lora_target_modules", KeyFate::mapped, "lora.target_modules", "all-linear = every projection; q_proj,v_proj = q,v"},
      {"lora_task_type", KeyFate::noted, "", "adapters on a causal LM (CAUSAL_LM)"},
      {"lora_modules_to_save", KeyFate::refused, "lora.target_modules", "only adapters train in a LoRA run"},
      {"use_rslora", KeyFate::copied, "lora.rslora", ""},
      {"use_dora", KeyFate::refused, "train.method", "DoRA is not trained here: lora or qlora"},
      {"load_in_8bit", KeyFate::refused, "train.method", "8-bit bases are not trained: load_in_4bit (qlora)"},
      {"load_in_4bit", KeyFate::mapped, "train.method", "with use_peft: qlora (NF4, as bitsandbytes)"},
      {"bnb_4bit_quant_type", KeyFate::mapped, "lora.quant_type", "nf4 (fp4 refused)"},
      {"use_bnb_nested_quant", KeyFate::copied, "lora.double_quant", ""},
      // the trainers' configs
      {"max_length", KeyFate::copied, "data.cutoff_len", ""},
      {"packing", KeyFate::copied, "data.packing", "each packed sequence attends only to itself (TRL's padding_free)"},
      {"padding_free", KeyFate::noted, "", "packed rows (data.packing) never attend across sequences"},
      {"beta", KeyFate::mapped, "dpo.beta", "kto.beta for kto, grpo.beta for grpo, rloo.beta for rloo"},
      {"loss_type", KeyFate::mapped, "dpo.loss",
       "dpo: one of sigmoid | hinge | ipo (others refused); sft: nll; kto: kto; grpo: grpo.loss_type (dapo | grpo | "
       "dr_grpo | bnpo)"},
      {"label_smoothing", KeyFate::copied, "dpo.label_smoothing", ""},
      {"desirable_weight", KeyFate::copied, "kto.desirable_weight", ""},
      {"undesirable_weight", KeyFate::copied, "kto.undesirable_weight", ""},
      {"center_rewards_coefficient", KeyFate::mapped, "rm.center_rewards_coefficient", "null = 0 (off)"},
      {"precompute_ref_log_probs", KeyFate::noted, "", "dpo.reference = auto uses precomputed log-probs where the data has them"},
      {"disable_dropout", KeyFate::noted, "", "the model runs without dropout (lora.dropout is the adapters' own)"},
      {"dataset_num_proc", KeyFate::noted, "", "prep runs on every rank, each its share of the records"},
      {"dataset_text_field", KeyFate::noted, "", "records are read by their shape (messages, prompt/completion, ...)"},
      {"completion_only_loss", KeyFate::noted, "", "only completions carry loss here"},
      {"assistant_only_loss", KeyFate::noted, "", "only the assistant turns carry loss here (TRL's true)"},
      {"truncation_mode", KeyFate::noted, "", "prep keeps the end of the prompt and the start of the completion"},
      {"model_init_kwargs", KeyFate::noted, "",
       "the model is read from its directory: weights as fp32 masters, compute train.dtype, attention model.attention"},
      {"ref_model_init_kwargs", KeyFate::noted, "", "the reference is the model at its start, read the same way"},
      {"dataset_kwargs", KeyFate::noted, "", "records are read by their shape and prepped by train"},
      {"max_prompt_length", KeyFate::noted, "",
       "TRL 1.16's DPOConfig has none (max_length cuts the row); the row is cut at max_length (data.cutoff_len), "
       "prep keeping the end of the prompt and the start of the completions"},
      {"max_completion_length", KeyFate::mapped, "grpo.max_completion_length",
       "grpo: copied; the others: the row is cut at max_length (data.cutoff_len), prep keeping the end of the "
       "prompt and the start of the completions"},
      {"use_weighting", KeyFate::refused, "dpo.loss", "WPO weighting is not offered"},
      {"sync_ref_model", KeyFate::refused, "dpo.reference", "the reference is the model at its start (TR-DPO not offered)"},
      {"chat_template_path", KeyFate::refused, "prep.template", "the model's own template (prep.template = auto)"},
      {"eos_token", KeyFate::noted, "", "the tokenizer's end-of-turn ends each completion"},
      // GRPOConfig and TRL's grpo script (trainers grpo and rloo only: the others' configs have none;
      // rloo's land in rloo.*, and RLOOConfig lacks the loss and scaling keys, kGrpoNotRloo)
      {"num_generations", KeyFate::copied, "grpo.num_generations", ""},
      {"epsilon", KeyFate::copied, "grpo.epsilon", ""},
      {"epsilon_high", KeyFate::copied, "grpo.epsilon_high", "null = epsilon"},
      {"delta", KeyFate::copied, "grpo.delta", "null = none"},
      {"use_bias_correction_kl", KeyFate::copied, "grpo.use_bias_correction_kl", ""},
      {"importance_sampling_level", KeyFate::copied, "grpo.importance_sampling_level", ""},
      {"scale_rewards", KeyFate::mapped, "grpo.scale_rewards", "true = group, false = none, else as written"},
      {"multi_objective_aggregation", KeyFate::copied, "grpo.multi_objective_aggregation", ""},
      {"steps_per_generation", KeyFate::copied, "grpo.steps_per_generation", "null = gradient_accumulation_steps"},
      {"generation_batch_size", KeyFate::refused, "grpo.steps_per_generation",
       "write steps_per_generation = generation_batch_size / (per_device_train_batch_size x processes)"},
      {"num_iterations", KeyFate::copied, "grpo.num_iterations", ""},
      {"mask_truncated_completions", KeyFate::copied, "grpo.mask_truncated_completions", ""},
      {"top_entropy_quantile", KeyFate::copied, "grpo.top_entropy_quantile", ""},
      {"temperature", KeyFate::copied, "grpo.temperature", ""},
      {"reward_funcs", KeyFate::copied, "grpo.reward_funcs", "the rule rewards by their registry words"},
      {"reward_weights", KeyFate::copied, "grpo.reward_weights", "null = 1 each"},
      {"chat_template_kwargs", KeyFate::mapped, "prep.template_kwargs",
       "the chat templates' extra variables (enable_thinking ...): the prompts' and the reward model's, as TRL"},
      {"reward_model_name_or_path", KeyFate::copied, "reward.model",
       "a local reward model directory, scored before reward_funcs (a hub id is refused with its `hf download` command)"},
      {"shuffle_dataset", KeyFate::copied, "data.shuffle", ""},
      {"use_vllm", KeyFate::noted, "", "completions are sampled on the training ranks (no second engine, no weight sync)"},
      {"vllm_mode", KeyFate::noted, "", "no vLLM: see use_vllm"},
      {"vllm_gpu_memory_utilization", KeyFate::noted, "", "no vLLM: see use_vllm"},
      {"vllm_tensor_parallel_size", KeyFate::noted, "", "no vLLM: see use_vllm"},
      {"vllm_server_host", KeyFate::noted, "", "no vLLM: see use_vllm"},
      {"vllm_server_port", KeyFate::noted, "", "no vLLM: see use_vllm"},
      {"vllm_enable_sleep_mode", KeyFate::noted, "", "no vLLM: see use_vllm"},
      {"vllm_importance_sampling_correction", KeyFate::noted, "", "no vLLM: the completions are sampled from the policy itself"},
      {"top_p", KeyFate::copied, "grpo.top_p", ""},
      {"top_k", KeyFate::copied, "grpo.top_k", "0 = all"},
      {"min_p", KeyFate::copied, "grpo.min_p", "null = none"},
      {"repetition_penalty", KeyFate::mapped, "", "1.0 (TRL's default) only: sampling applies no repetition penalty"},
      {"generation_kwargs", KeyFate::refused, "grpo.temperature",
       "sampling takes grpo.temperature, top_p, top_k and min_p (TRL's keys of those names); other settings are not applied"},
      {"cache_implementation", KeyFate::noted, "", "decoding keeps its own KV cache"},
      {"log_completions", KeyFate::copied, "grpo.log_completions", "every completion, to train.output_dir/completions.jsonl"},
      // RLOOConfig's own
      {"normalize_advantages", KeyFate::copied, "rloo.normalize_advantages", ""},
      {"reward_clip_range", KeyFate::mapped, "rloo.reward_clip_range", "[low, high]; null = none"},
      {"num_completions_to_print", KeyFate::noted, "", "completions.jsonl holds every completion (log_completions)"},
      {"cast_lm_head_to_fp32", KeyFate::noted, "", "the head's log-softmax runs in fp32"},
      {"pad_token", KeyFate::noted, "", "padding never carries loss"},
  };
  return rows;
}

const std::vector<ForeignKeyRow>& all_rows() {
  static const std::vector<ForeignKeyRow> rows = joined_rows(own_rows(), training_argument_rows());
  return rows;
}

// TRL's defaults where they differ from shardtune's, as if written; learning_rate per trainer.
std::vector<std::pair<std::string, std::string>> defaults_of(TrlTrainer trainer) {
  const char* learning_rate = trainer == TrlTrainer::sft      ? "2e-05"
                              : trainer == TrlTrainer::reward ? "0.0001"
                                                              : "1e-06";
  return {{"learning_rate", learning_rate},
          {"num_train_epochs", "3.0"},
          {"per_device_train_batch_size", "8"},
          {"gradient_accumulation_steps", "1"},
          {"lr_scheduler_type", "linear"},
          {"logging_steps", "10"},
          {"save_steps", "500"},
          {"lora_dropout", "0.05"},
          {"use_bnb_nested_quant", "false"}};
}

// use_peft without lora_target_modules: PEFT's default for the model's type, said at start. A
// model that cannot be read is left to the loader, which names the problem.
void peft_default_targets(ForeignTranslator& t) {
  if (!t.has("model_name_or_path")) return;
  ModelConfig model;
  try {
    model = load_model_config(t.value("model_name_or_path"));
  } catch (const std::exception&) {
    return;
  }
  const std::string type = checkpoint_model_type(model);
  const char* targets = peft_default_target_modules(model);
  if (targets == nullptr) {
    t.refuse("use_peft", "without lora_target_modules PEFT 0.21 has no default target modules for model_type " + type +
                             " (TRL 1.16 passes none, and PEFT raises 'Please specify target_modules'); write "
                             "lora_target_modules (all-linear: every projection)");
    return;
  }
  t.derive("lora.target_modules", targets, "use_peft without lora_target_modules: PEFT 0.21's default for model_type " +
                                               type);
  t.note("use_peft", std::string("adapters on ") + targets + ": PEFT 0.21's default target modules for model_type " +
                         type + ", as TRL 1.16 passes no lora_target_modules");
}

void translate_model(ForeignTranslator& t) {
  const bool peft = t.has("use_peft") && t.truthy("use_peft");
  const bool four_bit = t.has("load_in_4bit") && t.truthy("load_in_4bit");
  if (four_bit && !peft) t.refuse("load_in_4bit", "a 4-bit base trains adapters only: add use_peft: true (qlora)");
  if (t.has("use_peft")) t.set("train.method", peft ? (four_bit ? "qlora" : "lora") : "full", "use_peft");
  if (t.has("bnb_4bit_quant_type") && t.value("bnb_4bit_quant_type") != "nf4") {
    t.refuse("bnb_4bit_quant_type", "the 4-bit base is NF4; lora.quant_type = nf4");
  }
  if (t.has("lora_target_modules")) {
    t.set("lora.target_modules", peft_target_modules(t.value("lora_target_modules")), "lora_target_modules");
  } else if (peft) {
    peft_default_targets(t);
  }
}

// dataset_name: a local JSON / JSONL file, or a folder with <dataset_train_split>.jsonl (.json).
// Parquet is refused with the one-line conversion; a hub name with the download command.
void translate_dataset(ForeignTranslator& t) {
  if (!t.has("dataset_name")) return;
  const std::string& name = t.value("dataset_name");
  const std::string split = t.has("dataset_train_split") ? t.value("dataset_train_split") : "train";
  const std::string convert = "convert it: python3 -c \"import pandas as p, sys; p.read_parquet(sys.argv[1]).to_json("
                              "sys.argv[2], orient='records', lines=True)\" IN.parquet OUT.jsonl";
  std::error_code error;
  if (fs::is_directory(name, error)) {
    for (const char* extension : {".jsonl", ".json"}) {
      const std::string file = name + "/" + split + extension;
      if (fs::is_regular_file(file, error)) {
        t.set("prep.dataset", file, "dataset_name");
        return;
      }
    }
    for (const auto& entry : fs::recursive_directory_iterator(name, error)) {
      if (ends_with(entry.path().string(), ".parquet")) {
        t.refuse("dataset_name", "holds Parquet (" + entry.path().string() + "), which prep does not read; " + convert);
        return;
      }
    }
    t.refuse("dataset_name", "the folder has no " + split + ".jsonl or " + split + ".json (dataset_train_split)");
  } else if (ends_with(name, ".parquet")) {
    t.refuse("dataset_name", "Parquet is not read by prep; " + convert);
  } else if (fs::is_regular_file(name, error)) {
    t.set("prep.dataset", name, "dataset_name");
  } else {
    t.refuse("dataset_name", "not a local file or folder; datasets are not downloaded: " +
                                 hub_download_command(name, true) + ", then name " + hub_download_directory(name, true) +
                                 " (JSONL files)");
  }
}

// GRPOConfig's keys the other trainers' configs do not have (TRL would refuse them too).
constexpr const char* kGrpoOnly[] = {"num_generations", "epsilon", "epsilon_high", "delta", "use_bias_correction_kl",
                                     "importance_sampling_level", "scale_rewards", "multi_objective_aggregation",
                                     "steps_per_generation", "num_iterations", "mask_truncated_completions",
                                     "top_entropy_quantile", "temperature", "reward_funcs", "reward_weights",
                                     "shuffle_dataset", "use_vllm", "top_p", "top_k", "min_p",
                                     "repetition_penalty", "generation_kwargs", "cache_implementation",
                                     "log_completions", "reward_model_name_or_path", "chat_template_kwargs"};
// GRPOConfig's keys RLOOConfig has not (TRL would refuse them too: its loss is one clipped ratio
// per completion, its advantages a leave-one-out baseline).
constexpr const char* kGrpoNotRloo[] = {"loss_type", "delta", "use_bias_correction_kl", "importance_sampling_level",
                                        "scale_rewards", "multi_objective_aggregation", "top_entropy_quantile"};
// RLOOConfig's own keys.
constexpr const char* kRlooOnly[] = {"normalize_advantages", "reward_clip_range"};

// chat_template_kwargs (a mapping, one setting per key): one JSON object, its YAML scalars as
// JSON's where they read as such (false, 1.5), else strings.
void translate_chat_template_kwargs(ForeignTranslator& t) {
  const std::string prefix = "chat_template_kwargs.";
  nlohmann::json kwargs = nlohmann::json::object();
  const std::vector<std::string> keys = t.children("chat_template_kwargs");
  for (const std::string& key : keys) {
    const std::string& text = t.value(key);
    nlohmann::json value = nlohmann::json::parse(text == "True" ? "true" : text == "False" ? "false" : text, nullptr,
                                                 /*allow_exceptions=*/false);
    if (value.is_discarded() || value.is_structured()) value = text;
    kwargs[key.substr(prefix.size())] = value;
  }
  if (!kwargs.empty()) t.set("prep.template_kwargs", kwargs.dump(), keys.front());
}

void translate_grpo(ForeignTranslator& t) {
  translate_chat_template_kwargs(t);
  if (t.has("repetition_penalty")) {
    const std::string& penalty = t.value("repetition_penalty");
    char* end = nullptr;
    const double value = std::strtod(penalty.c_str(), &end);
    if (end == penalty.c_str() || *end != '\0' || value != 1.0) {
      t.refuse("repetition_penalty", "sampling applies no repetition penalty: remove it or set 1.0");
    } else {
      t.note("repetition_penalty", "1.0: no penalty, as sampling here");
    }
  }
  if (t.has("beta")) t.set("grpo.beta", t.value("beta"), "beta");
  if (t.has("loss_type")) t.set("grpo.loss_type", t.value("loss_type"), "loss_type");
  if (t.has("max_completion_length")) t.set("grpo.max_completion_length", t.value("max_completion_length"), "max_completion_length");
  if (t.has("scale_rewards")) {
    const std::string& scale = t.value("scale_rewards");
    t.set("grpo.scale_rewards", scale == "true" || scale == "True" ? "group" : scale == "false" || scale == "False" ? "none" : scale,
          "scale_rewards");
  }
}

// RLOOConfig's reward_clip_range, a YAML list of two numbers: rloo.reward_clip_range's "low, high".
void translate_rloo(ForeignTranslator& t) {
  for (const char* key : kGrpoNotRloo) {
    if (t.has(key)) t.refuse(key, "a GRPOConfig key: RLOOConfig has none (trl grpo trains with it)");
  }
  if (t.has("reward_clip_range")) {  // a YAML list arrives as "low, high"; a command line's "[low, high]" too
    std::string bounds = trimmed(t.value("reward_clip_range"));
    if (bounds.size() >= 2 && bounds.front() == '[' && bounds.back() == ']') bounds = bounds.substr(1, bounds.size() - 2);
    t.set("rloo.reward_clip_range", bounds, "reward_clip_range");
  }
}

void translate_trainer(ForeignTranslator& t, TrlTrainer trainer) {
  if (trainer != TrlTrainer::rloo) {
    for (const char* key : kRlooOnly) {
      if (t.has(key)) t.refuse(key, std::string("an RLOOConfig key: trl ") + enum_name(trainer) + "'s config has none");
    }
  }
  if (trainer == TrlTrainer::grpo || trainer == TrlTrainer::rloo) {
    if (trainer == TrlTrainer::rloo) translate_rloo(t);
    translate_grpo(t);
    return;
  }
  for (const char* key : kGrpoOnly) {
    if (t.has(key)) t.refuse(key, std::string("a GRPOConfig key: trl ") + enum_name(trainer) + "'s config has none");
  }
  if (t.has("max_completion_length")) {
    t.note("max_completion_length", "the row is cut at max_length (data.cutoff_len), prep keeping the end of the "
                                    "prompt and the start of the completions");
  }
  if (t.has("beta")) t.set(trainer == TrlTrainer::kto ? "kto.beta" : "dpo.beta", t.value("beta"), "beta");
  if (t.has("loss_type")) {
    const std::string& loss = t.value("loss_type");
    const bool dpo_loss = loss == "sigmoid" || loss == "hinge" || loss == "ipo";
    if (trainer == TrlTrainer::dpo && dpo_loss) {
      t.set("dpo.loss", loss, "loss_type");
    } else if (!(trainer == TrlTrainer::sft && loss == "nll") && !(trainer == TrlTrainer::kto && loss == "kto")) {
      t.refuse("loss_type", "not trained here: dpo takes one of sigmoid | hinge | ipo (dpo.loss; simpo and orpo are "
                            "dpo.loss too), sft nll, kto kto");
    }
  }
  if (t.has("center_rewards_coefficient")) {
    t.set("rm.center_rewards_coefficient", t.value("center_rewards_coefficient"), "center_rewards_coefficient");
  }
  if (trainer == TrlTrainer::dpo) t.derive("dpo.logged_logps", "sum", "DPOTrainer logs summed log-probs");
}

}  // namespace

const char* trl_stage(TrlTrainer trainer) {
  switch (trainer) {
    case TrlTrainer::sft: return "sft";
    case TrlTrainer::dpo: return "dpo";
    case TrlTrainer::kto: return "kto";
    case TrlTrainer::reward: return "rm";
    case TrlTrainer::grpo: return "grpo";
    case TrlTrainer::rloo: return "rloo";
  }
  return "sft";
}

bool is_trl_key(const std::string& key) {
  for (const ForeignKeyRow& row : all_rows()) {
    if (key == row.key) return true;
  }
  return false;
}

std::vector<std::string> trl_keys() { return row_keys(all_rows()); }

ForeignTranslation translate_trl(TrlTrainer trainer, const std::vector<ForeignSetting>& given,
                                 const std::vector<std::string>& native_keys) {
  std::map<std::string, ForeignSetting> keys;
  for (const auto& [key, value] : defaults_of(trainer)) keys[key] = {key, value, "TRL's default", false};
  for (const ForeignSetting& setting : given) keys[setting.key] = setting;  // later sources win
  ForeignTranslator t("TRL", keys);
  t.apply_rows(all_rows(), native_keys);
  t.derive("train.stage", trl_stage(trainer), std::string("trl ") + enum_name(trainer));
  translate_model(t);
  check_local_model_path(t);
  check_local_model_path(t, "reward_model_name_or_path");
  translate_dataset(t);
  translate_trainer(t, trainer);
  translate_training_arguments(t);
  t.derive("ckpt.export", "true", "the trained model is saved at the end (<output_dir>/export)");
  ForeignTranslation out = t.finish();
  if (trainer == TrlTrainer::rloo) {  // GRPOConfig's rows, in RLOO's section
    for (ConfigSetting& setting : out.settings) {
      if (starts_with(setting.name, "grpo.")) setting.name = "rloo." + setting.name.substr(5);
    }
  }
  return out;
}

std::string trl_key_table() { return markdown_rows(all_rows(), "TRL"); }

std::vector<std::pair<std::string, std::string>> trl_aliases() { return row_aliases(all_rows()); }

}  // namespace st

// Another tool's config read as that tool means it: LlamaFactory's training YAML or command
// line (`llamafactory-cli train run.yaml --learning_rate 1e-4`) becomes shardtune's keys, with
// where each came from. Every key is mapped, noted (no meaning here: one line saying what
// shardtune does instead) or refused by name with why and the nearest shardtune key.
#pragma once

#include <string>
#include <vector>

#include "config/config_parser.h"
#include "config/config_schema.h"
#include "util/enum_names.h"

namespace st {

// A key as the user wrote it: "learning_rate" = "1e-4" at "run.yaml:12" or "command line".
struct ForeignSetting {
  std::string key, value, origin;
  bool null = false;  // YAML null: the tool's default
};

struct ForeignTranslation {
  std::vector<ConfigSetting> settings;  // one per shardtune key, origins "run.yaml:12 (learning_rate)"
  std::vector<std::string> notes;       // the noted keys, one line each
};

// LlamaFactory's keys (its defaults first where they differ from shardtune's, when
// `with_defaults`: a YAML or a command line of its keys alone; not when they override an INI).
// Throws one ConfigError listing every refused or unknown key with its origin (an unknown one
// with the nearest of LlamaFactory's keys, else of `native_keys`).
ForeignTranslation translate_llamafactory(const std::vector<ForeignSetting>& given, bool with_defaults,
                                          const std::vector<std::string>& native_keys);

// The tools whose configs train reads (`train --print-keys TOOL` prints each one's key table).
enum class ForeignTool { llamafactory, trl };
template <>
struct EnumNames<ForeignTool> {
  static constexpr NamedValue<ForeignTool> table[] = {{ForeignTool::llamafactory, "llamafactory"},
                                                      {ForeignTool::trl, "trl"}};
};

// The trainer of `trl sft|dpo|kto|reward|grpo|rloo --config x.yaml`: `shardtune train dpo --config x.yaml`.
enum class TrlTrainer { sft, dpo, kto, reward, grpo, rloo };
template <>
struct EnumNames<TrlTrainer> {
  static constexpr NamedValue<TrlTrainer> table[] = {
      {TrlTrainer::sft, "sft"}, {TrlTrainer::dpo, "dpo"}, {TrlTrainer::kto, "kto"}, {TrlTrainer::reward, "reward"},
      {TrlTrainer::grpo, "grpo"}, {TrlTrainer::rloo, "rloo"}};
};

// TRL's keys (ScriptArguments, ModelConfig, the trainer's config) with TRL's defaults;
// dataset_name a local JSON / JSONL file or folder (Parquet and hub names refused with the
// command that fixes them). Throws as translate_llamafactory.
ForeignTranslation translate_trl(TrlTrainer trainer, const std::vector<ForeignSetting>& given,
                                 const std::vector<std::string>& native_keys);
bool is_trl_key(const std::string& key);
std::vector<std::string> trl_keys();
// train.stage of a trainer: reward = rm.
const char* trl_stage(TrlTrainer trainer);
std::string trl_key_table();

// Whether `key` is one of LlamaFactory's keys that this reads (mapped, noted or refused).
bool is_llamafactory_key(const std::string& key);
std::vector<std::string> llamafactory_keys();

// Every LlamaFactory and TRL key that names one shardtune key, registered as the schema's
// aliases ("learning_rate is LlamaFactory's and TRL's name for optim.lr").
void add_foreign_aliases(ConfigSchema& schema);

// Every key of the table as a Markdown row: | key | shardtune | how |, for docs.
std::string llamafactory_key_table();

}  // namespace st

// What LlamaFactory's and TRL's vocabularies share: a key table's rows, the Hugging Face
// TrainingArguments both extend, and the translator that turns the keys a user wrote into
// shardtune's settings (with their origins), notes and refusals. Used by llamafactory_config.cpp
// and trl_config.cpp only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "train/foreign_config.h"

namespace st {

enum class KeyFate {
  copied,   // the value as written, to `native`
  mapped,   // translated by the vocabulary's code
  noted,    // no meaning here: one line saying what shardtune does instead (`how`)
  refused,  // why (`how`), and the nearest shardtune key (`native`, may be empty)
};

struct ForeignKeyRow {
  const char* key;
  KeyFate fate;
  const char* native;
  const char* how;
};

class ForeignTranslator {
 public:
  ForeignTranslator(std::string tool, std::map<std::string, ForeignSetting> keys)
      : tool_(std::move(tool)), keys_(std::move(keys)) {}

  bool has(const std::string& key) const;  // given and not null
  const std::string& value(const std::string& key) const { return keys_.at(key).value; }
  bool truthy(const std::string& key) const;  // true | True | 1 | yes | on
  // The keys given inside a mapping: lr_scheduler_kwargs -> lr_scheduler_kwargs.min_lr_rate, ...
  std::vector<std::string> children(const std::string& parent) const;

  void set(const std::string& native, const std::string& value, const std::string& key);
  void derive(const std::string& native, const std::string& value, const std::string& why);
  void note(const std::string& key, const std::string& why);
  void refuse(const std::string& key, const std::string& why);

  // Every given key against `rows`: copied, noted and refused ones done here; one in no row is
  // unknown (refused with the nearest of the rows' keys, else of `native_keys`).
  void apply_rows(const std::vector<ForeignKeyRow>& rows, const std::vector<std::string>& native_keys);
  // The settings and notes; one ConfigError listing every refusal with its origin.
  ForeignTranslation finish();

 private:
  std::string tool_;
  std::map<std::string, ForeignSetting> keys_;
  ForeignTranslation out_;
  std::vector<std::string> refusals_;
};

// Hugging Face TrainingArguments' keys (learning_rate, per_device_train_batch_size, ...).
const std::vector<ForeignKeyRow>& training_argument_rows();
// Their keys that need more than a copy: the dtype, max_steps -1, the schedule, optim, the eval
// and save strategies, report_to, deepspeed.
void translate_training_arguments(ForeignTranslator& t);

// model_name_or_path, which both tools' ModelArguments have (or another key naming a model, TRL's
// reward_model_name_or_path): a hub id is refused with the command that fetches it and the line
// to change (shardtune reads local files only).
void check_local_model_path(ForeignTranslator& t, const std::string& key = "model_name_or_path");

// TRL's rows that name one shardtune key (trl_config.cpp), for the aliases both tables give.
std::vector<std::pair<std::string, std::string>> trl_aliases();

// PEFT-style target module names as lora.target_modules lists them: all / all-linear = every
// projection; "q_proj, v_proj" = "q,v".
std::string peft_target_modules(const std::string& value);

// `base` then `more`, for a vocabulary's whole table.
std::vector<ForeignKeyRow> joined_rows(const std::vector<ForeignKeyRow>& base, const std::vector<ForeignKeyRow>& more);
std::vector<std::string> row_keys(const std::vector<ForeignKeyRow>& rows);
// The rows that name one shardtune key (copied or mapped), as (key, shardtune key).
std::vector<std::pair<std::string, std::string>> row_aliases(const std::vector<ForeignKeyRow>& rows);
std::string markdown_rows(const std::vector<ForeignKeyRow>& rows, const std::string& tool);

}  // namespace st

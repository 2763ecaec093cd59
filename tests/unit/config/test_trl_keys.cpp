// TRL's keys as users write them (lib/train/trl_config.cpp, foreign_keys.cpp): nested mappings
// (`*_kwargs`) read or noted key by key, TrainingArguments' common keys each copied, mapped or
// noted with its reason, and use_peft's target modules as PEFT 0.21 picks them per model type.
#include <gtest/gtest.h>

#include "hf/lora_target.h"
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "config_test_helpers.h"
#include "hf/model_config.h"
#include "hf/presets.h"
#include "util/errors.h"

namespace st {
namespace {

using namespace testing;  // parse, config_error, has, TempYaml

bool noted(const ConfigArguments& parsed, const std::string& part) {
  for (const std::string& note : parsed.notes) {
    if (has(note, part)) return true;
  }
  return false;
}

// A model directory with the config.json of a preset (its model_type), removed when it dies.
struct ModelDirectory {
  explicit ModelDirectory(const std::string& preset) {
    char name[] = "/tmp/st_trl_model_XXXXXX";
    path = mkdtemp(name);
    std::ofstream(path + "/config.json") << to_hf_config_json(preset_config(preset)).dump();
  }
  ~ModelDirectory() { std::filesystem::remove_all(path); }
  std::string path;
};

TEST(TrlKeys, NestedMappingsAreReadOrNotedKeyByKey) {
  TempYaml yaml(
      "model_name_or_path: /m\n"
      "lr_scheduler_type: cosine_with_min_lr\n"
      "lr_scheduler_kwargs:\n  min_lr_rate: 0.1\n"
      "gradient_checkpointing: true\n"
      "gradient_checkpointing_kwargs:\n  use_reentrant: false\n"
      "model_init_kwargs:\n  torch_dtype: bfloat16\n  attn_implementation: sdpa\n");
  const ConfigArguments parsed = parse({"dpo", yaml.path()});
  EXPECT_EQ(parsed.config.optim.schedule, LrSchedule::cosine_with_min_lr);
  EXPECT_EQ(parsed.config.optim.min_lr_ratio, 0.1);
  EXPECT_EQ(parsed.origins.at("optim.min_lr_ratio"), yaml.path() + ":4 (lr_scheduler_kwargs.min_lr_rate)");
  EXPECT_TRUE(noted(parsed, yaml.path() + ":7: gradient_checkpointing_kwargs.use_reentrant = false: recomputation"));
  EXPECT_TRUE(noted(parsed, yaml.path() + ":9: model_init_kwargs.torch_dtype = bfloat16: the model is read"));
  EXPECT_TRUE(noted(parsed, yaml.path() + ":10: model_init_kwargs.attn_implementation = sdpa"));
  // The same as JSON on the command line, as Hugging Face's parser takes a dict; min_lr as a rate.
  const ConfigArguments flags =
      parse({"dpo", "--model_name_or_path", "/m", "--learning_rate", "1e-5", "--lr_scheduler_kwargs", "{\"min_lr\": 1e-6}",
             "--gradient_checkpointing_kwargs", "{\"use_reentrant\": false}"});
  EXPECT_DOUBLE_EQ(flags.config.optim.min_lr_ratio, 0.1);
  EXPECT_TRUE(noted(flags, "command line: gradient_checkpointing_kwargs.use_reentrant = false"));
  // What is not read is refused by its key; a key that holds a value holds no mapping.
  const std::string error =
      config_error({"dpo", "--model_name_or_path", "/m", "--lr_scheduler_kwargs", "{\"power\": 2}", "--beta", "{\"a\": 1}"});
  EXPECT_TRUE(has(error, "command line: lr_scheduler_kwargs.power = 2: not read: lr_scheduler_kwargs takes min_lr_rate "
                         "or min_lr")) << error;
  EXPECT_TRUE(has(error, "command line: beta.a: beta takes a value, not a mapping")) << error;
  EXPECT_TRUE(has(config_error({"dpo", "--lr_scheduler_kwargs", "{broken"}), "not a JSON mapping"));
}

TEST(TrlKeys, TrainingArgumentsCommonKeysAreMappedOrNotedWithTheirReason) {
  TempYaml yaml(
      "model_name_or_path: /m\nuse_liger_kernel: true\ntf32: true\ndataloader_drop_last: true\n"
      "remove_unused_columns: false\ndisable_tqdm: true\nlogging_strategy: steps\nlogging_steps: 5\n"
      "max_prompt_length: 512\nmax_completion_length: 512\nuse_cpu: true\n");
  const ConfigArguments parsed = parse({"dpo", yaml.path()});
  EXPECT_EQ(parsed.config.train.log_every, 5);
  for (const char* key : {"use_liger_kernel", "tf32", "dataloader_drop_last", "remove_unused_columns", "disable_tqdm",
                          "max_prompt_length", "max_completion_length", "use_cpu"}) {
    EXPECT_TRUE(noted(parsed, std::string(": ") + key + " = ")) << key;
  }
  EXPECT_TRUE(noted(parsed, "use_liger_kernel = true: not needed: the log-probs are computed in chunks"));
  EXPECT_TRUE(has(config_error({"sft", yaml.path(), "--logging_strategy", "epoch"}),
                  "logging_strategy = epoch: by epoch is not offered"));
  EXPECT_TRUE(noted(parse({"sft", yaml.path(), "--logging_strategy", "no"}), "logging_strategy = no: metrics.jsonl"));
}

// TRL 1.16 passes lora_target_modules (None by default) to PEFT 0.21, which then takes its table
// TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING by model_type: q_proj and v_proj for the
// dense families, none for qwen3_moe (PEFT raises).
TEST(TrlKeys, UsePeftWithoutTargetsTakesPeftsDefaultForTheModelType) {
  const ModelDirectory llama("debug");
  const ConfigArguments parsed = parse({"dpo", "--model_name_or_path", llama.path, "--use_peft"});
  EXPECT_EQ(parsed.config.train.method, TrainMethod::lora);
  EXPECT_EQ(parsed.config.lora.target_modules, "q,v");
  EXPECT_TRUE(noted(parsed, "use_peft = true: adapters on q,v: PEFT 0.21's default target modules for model_type llama"));
  EXPECT_EQ(parse({"dpo", "--model_name_or_path", llama.path, "--use_peft", "--lora_target_modules", "all-linear"})
                .config.lora.target_modules,
            kEveryLoraTarget);  // those the model has: a Llama's seven
  const ModelDirectory moe("debug-moe");
  const std::string error = config_error({"dpo", "--model_name_or_path", moe.path, "--use_peft"});
  EXPECT_TRUE(has(error, "use_peft = true: without lora_target_modules PEFT 0.21 has no default target modules for "
                         "model_type qwen3_moe")) << error;
  // Without adapters nothing is chosen.
  EXPECT_EQ(parse({"dpo", "--model_name_or_path", llama.path}).config.train.method, TrainMethod::full);
}

}  // namespace
}  // namespace st

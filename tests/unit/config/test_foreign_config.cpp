// LlamaFactory's YAML and command line read as LlamaFactory means them (lib/train/foreign_*,
// lib/config/yaml_file): each key mapped with its origin, its defaults where they differ,
// keys without meaning noted, the rest refused by name with the nearest key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "config/yaml_file.h"
#include "hf/lora_target.h"
#include "config_test_helpers.h"
#include "train/foreign_config.h"
#include "util/errors.h"

namespace st {
namespace {

using testing::config_error;
using testing::has;
using testing::parse;
using testing::TempYaml;

// LlamaFactory's examples/train_lora/qwen3_lora_dpo.yaml, its keys as written there.
const char* kLoraDpo = R"(### model
model_name_or_path: /models/qwen3
trust_remote_code: true

### method
stage: dpo
do_train: true
finetuning_type: lora
lora_rank: 8
lora_target: all
pref_beta: 0.1
pref_loss: sigmoid  # choices: [sigmoid (dpo), orpo, simpo]

### dataset
dataset: dpo_en_demo
template: qwen3_nothink
cutoff_len: 2048
max_samples: 1000
preprocessing_num_workers: 16
dataloader_num_workers: 4

### output
output_dir: saves/qwen3-4b/lora/dpo
logging_steps: 10
save_steps: 500
plot_loss: true
overwrite_output_dir: true
save_only_model: false
report_to: none  # choices: [none, wandb, tensorboard, swanlab, mlflow]

### train
per_device_train_batch_size: 1
gradient_accumulation_steps: 8
learning_rate: 5.0e-6
num_train_epochs: 3.0
lr_scheduler_type: cosine
warmup_ratio: 0.1
bf16: true
ddp_timeout: 180000000
resume_from_checkpoint: null
)";

TEST(LlamaFactoryYaml, EveryKeyOfTheLoraDpoExampleIsMappedOrNoted) {
  TempYaml yaml(kLoraDpo);
  const auto parsed = parse({"--config", yaml.path()});
  const TrainConfig& c = parsed.config;
  EXPECT_EQ(c.model.path, "/models/qwen3");
  EXPECT_EQ(c.train.stage, Stage::dpo);
  EXPECT_EQ(c.train.method, TrainMethod::lora);
  EXPECT_EQ(c.lora.r, 8);
  EXPECT_EQ(c.lora.alpha, 16.0);  // LlamaFactory's default: 2 x lora_rank (shardtune's own is 32)
  EXPECT_EQ(c.lora.target_modules, kEveryLoraTarget);
  EXPECT_EQ(c.dpo.beta, 0.1);
  EXPECT_EQ(c.dpo.loss, PreferenceLoss::sigmoid);
  EXPECT_EQ(c.prep.dataset, "dpo_en_demo");
  EXPECT_EQ(c.prep.dataset_dir, "data");  // LlamaFactory's default dataset_dir
  ASSERT_TRUE(c.prep.chat_template.has_value());
  EXPECT_EQ(*c.prep.chat_template, TemplateKind::qwen3_nothink);
  EXPECT_EQ(c.data.cutoff_len, 2048);
  EXPECT_EQ(c.prep.max_samples, 1000);
  EXPECT_EQ(c.train.output_dir, "saves/qwen3-4b/lora/dpo");
  EXPECT_EQ(c.train.log_every, 10);
  EXPECT_EQ(c.ckpt.every, 500);
  EXPECT_TRUE(c.train.overwrite);
  EXPECT_FALSE(c.train.tensorboard);
  EXPECT_EQ(c.train.micro_batch, 1);
  EXPECT_EQ(c.train.grad_accum, 8);
  EXPECT_EQ(c.optim.lr, 5e-6);
  EXPECT_EQ(c.train.epochs, 3.0);
  EXPECT_EQ(c.optim.schedule, LrSchedule::cosine);
  EXPECT_EQ(c.optim.warmup_ratio, 0.1);
  EXPECT_EQ(c.train.dtype, ComputeDtype::bf16);
  EXPECT_TRUE(c.ckpt.export_hf);  // LlamaFactory saves the model at the end
  EXPECT_EQ(c.train.resume, "");  // null: LlamaFactory's default

  EXPECT_EQ(parsed.origins.at("optim.lr"), yaml.path() + ":34 (learning_rate)");
  EXPECT_EQ(parsed.origins.at("lora.alpha"), "LlamaFactory: lora_alpha = 2 x lora_rank");
  EXPECT_EQ(parsed.origins.at("dpo.beta"), yaml.path() + ":11 (pref_beta)");
  EXPECT_EQ(parsed.origins.at("prep.dataset_dir"), "LlamaFactory's default (dataset_dir)");
  std::string notes;
  for (const std::string& note : parsed.notes) notes += note + "\n";
  for (const char* key : {"trust_remote_code", "preprocessing_num_workers", "dataloader_num_workers", "plot_loss",
                          "save_only_model", "ddp_timeout"}) {
    EXPECT_TRUE(has(notes, std::string(": ") + key + " = ")) << key << " not noted in:\n" << notes;
  }
  EXPECT_TRUE(has(notes, yaml.path() + ":3: trust_remote_code = true: no remote code runs")) << notes;
}

TEST(LlamaFactoryYaml, ItsDefaultsApplyWhereTheyDifferFromShardtunes) {
  TempYaml yaml("model_name_or_path: /models/llama\ndataset: alpaca_en_demo\n");
  const TrainConfig c = parse({"--config", yaml.path()}).config;
  EXPECT_EQ(c.train.stage, Stage::sft);
  EXPECT_EQ(c.train.method, TrainMethod::lora);
  EXPECT_EQ(c.optim.lr, 5e-5);
  EXPECT_EQ(c.train.micro_batch, 8);
  EXPECT_EQ(c.train.grad_accum, 1);
  EXPECT_EQ(c.train.epochs, 3.0);
  EXPECT_EQ(c.optim.schedule, LrSchedule::linear);
  EXPECT_EQ(c.train.log_every, 500);
  EXPECT_EQ(c.data.cutoff_len, 2048);
  EXPECT_EQ(c.train.dtype, ComputeDtype::fp32);  // neither bf16 nor fp16: fp32, as the HF Trainer
  EXPECT_EQ(c.lora.r, 8);
  EXPECT_EQ(c.lora.alpha, 16.0);
}

TEST(LlamaFactoryYaml, FlagsAfterItOverrideItsKeysAndNativeFlagsOverrideBoth) {
  TempYaml yaml(kLoraDpo);
  const auto flags = parse({"--config", yaml.path(), "--learning_rate", "1e-4", "--pref_beta=0.3"});
  EXPECT_EQ(flags.config.optim.lr, 1e-4);
  EXPECT_EQ(flags.config.dpo.beta, 0.3);
  EXPECT_EQ(flags.origins.at("optim.lr"), "command line (learning_rate)");
  const auto native = parse({"--config", yaml.path(), "--learning_rate", "1e-4", "--optim.lr=2e-4"});
  EXPECT_EQ(native.config.optim.lr, 2e-4);
  EXPECT_EQ(native.origins.at("optim.lr"), "command line");
  // The YAML as the positional argument, as `llamafactory-cli train run.yaml` takes it.
  EXPECT_EQ(parse({yaml.path()}).config.optim.lr, 5e-6);
}

// train's own switches (--dry-run), options with a value (--resume auto), the YAML and TRL's
// trainer word, in any order.
TEST(ForeignArguments, SwitchesComeBeforeOrAfterTheYamlAndTheTrainerWord) {
  po::options_description own;
  std::string resume;
  own.add_options()("dry-run", "plan only")("resume", po::value(&resume), "checkpoint");
  TempYaml yaml(kLoraDpo);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--dry-run", yaml.path()}, {yaml.path(), "--dry-run"},
        {"--dry-run", "--config", yaml.path()}, {"--resume", "auto", "--dry-run", yaml.path(), "--pref_beta", "0.3"}}) {
    const ConfigArguments parsed = parse_config_arguments(args, own);
    EXPECT_EQ(parsed.config.optim.lr, 5e-6) << args.front();
    EXPECT_EQ(parsed.config.train.stage, Stage::dpo) << args.front();
    EXPECT_EQ(parsed.command_values.count("dry-run"), 1u) << args.front();
  }
  EXPECT_EQ(parse_config_arguments({"--resume", "auto", "--dry-run", yaml.path(), "--pref_beta", "0.3"}, own)
                .config.dpo.beta,
            0.3);
  TempYaml trl("model_name_or_path: /m\n");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--dry-run", "dpo", trl.path()}, {"--dry-run", "dpo", "--config", trl.path()},
        {"--resume", "auto", "dpo", trl.path(), "--beta", "0.2"}}) {
    const ConfigArguments parsed = parse_config_arguments(args, own);
    EXPECT_EQ(parsed.config.train.stage, Stage::dpo) << args.back();
    EXPECT_EQ(parsed.config.optim.lr, 1e-6) << args.back();  // DPOConfig's default: read as TRL's
  }
  // A value that happens to be a trainer's name stays the option's value.
  EXPECT_EQ(parse_config_arguments({"--resume", "sft", yaml.path()}, own).config.train.stage, Stage::dpo);
}

TEST(LlamaFactoryFlags, ACommandLineOfItsKeysAloneGetsItsDefaults) {
  const auto parsed = parse({"--stage", "dpo", "--do_train", "True", "--model_name_or_path", "/m", "--finetuning_type",
                             "full", "--fp16", "True", "--deepspeed", "cache/ds_z3_config.json"});
  EXPECT_EQ(parsed.config.train.stage, Stage::dpo);
  EXPECT_EQ(parsed.config.train.method, TrainMethod::full);
  EXPECT_EQ(parsed.config.train.dtype, ComputeDtype::fp16);
  EXPECT_EQ(parsed.config.dist.sharding, Sharding::full);
  EXPECT_EQ(parsed.config.train.micro_batch, 8);  // LlamaFactory's default
}

TEST(LlamaFactoryFlags, OverAnIniTheyAreAliasesWithoutLlamaFactorysDefaults) {
  testing::TempIni ini("[optim]\nlr = 3e-4\n");
  const auto parsed = parse({"--config", ini.path(), "--per_device_train_batch_size", "2"});
  EXPECT_EQ(parsed.config.train.micro_batch, 2);
  EXPECT_EQ(parsed.config.optim.lr, 3e-4);
  EXPECT_EQ(parsed.config.lora.alpha, 32.0);  // shardtune's default: no LlamaFactory defaults over an INI
  EXPECT_EQ(parsed.config.train.log_every, 10);
}

TEST(LlamaFactoryYaml, RefusedAndUnknownKeysAreNamedTogetherWithTheirLines) {
  TempYaml yaml("stage: ppo\nfinetuning_type: freeze\nlearning_rat: 1e-4\nuse_dora: true\n");
  const std::string error = config_error({"--config", yaml.path()});
  EXPECT_TRUE(has(error, yaml.path() + ":1: stage = ppo: pretraining on raw text (pt) and PPO are not trained here"))
      << error;
  EXPECT_TRUE(has(error, yaml.path() + ":2: finetuning_type = freeze: freeze and oft are not trained here")) << error;
  EXPECT_TRUE(has(error, yaml.path() + ":3: learning_rat is not a LlamaFactory key shardtune reads. Did you mean "
                                        "learning_rate?"))
      << error;
  EXPECT_TRUE(has(error, yaml.path() + ":4: use_dora = true: DoRA is not trained here: lora or qlora (nearest: "
                                        "train.method)"))
      << error;
}

TEST(LlamaFactoryYaml, AValueTheKeyCannotHoldNamesItsLineAndBothKeys) {
  TempYaml yaml("learning_rate: fast\n");
  const std::string error = config_error({"--config", yaml.path()});
  EXPECT_TRUE(has(error, yaml.path() + ":1 (learning_rate): 'fast' is not valid for optim.lr. Expected a number"))
      << error;
  TempYaml words("lr_scheduler_type: polynomial\n");
  const std::string word_error = config_error({"--config", words.path()});
  EXPECT_TRUE(has(word_error, "optim.schedule = polynomial (" + words.path() + ":1 (lr_scheduler_type)) is not one of"))
      << word_error;
}

TEST(LlamaFactoryYaml, MalformedFilesAreRefusedWithTheLine) {
  TempYaml nested("model_name_or_path: /m\nlora:\n  rank: 8\n");  // a mapping's keys are read one by one
  EXPECT_TRUE(has(config_error({"--config", nested.path()}),
                  nested.path() + ":3: lora.rank is not a LlamaFactory key shardtune reads"));
  TempYaml listed("lora_target:\n  - {name: q}\n");
  EXPECT_TRUE(has(config_error({"--config", listed.path()}), listed.path() + ":2: lora_target lists something other"));
  TempYaml repeated("seed: 1\nseed: 2\n");
  EXPECT_TRUE(has(config_error({"--config", repeated.path()}), repeated.path() + ":2: seed is set more than once"));
  TempYaml list("- a\n- b\n");
  EXPECT_TRUE(has(config_error({"--config", list.path()}), "the top level is not a mapping"));
  TempYaml broken("stage: [dpo\n");
  EXPECT_TRUE(has(config_error({"--config", broken.path()}), "not valid YAML"));
  EXPECT_TRUE(has(config_error({"--config", "/nonexistent/run.yaml"}), "/nonexistent/run.yaml: cannot open config file"));
}

TEST(ForeignFlags, AnUnknownFlagGetsTheNearestOptionKeyOrAlias) {
  EXPECT_TRUE(has(config_error({"--learning_rat", "1"}), "unknown option --learning_rat. Did you mean --learning_rate?"));
  EXPECT_TRUE(has(config_error({"--optim.lrr=1"}), "Did you mean --optim.lr?"));
  EXPECT_TRUE(has(config_error({"--frobnicate"}), "unknown option --frobnicate. Run with --help"));
}

TEST(ForeignAliases, AnotherToolsNameInAnIniNamesTheKey) {
  testing::TempIni ini("[optim]\nlearning_rate = 1e-4\n");
  EXPECT_TRUE(has(config_error({"--config", ini.path()}),
                  ini.path() + ":2: unknown key 'optim.learning_rate'. learning_rate is LlamaFactory's and TRL's name "
                               "for optim.lr."));
  testing::TempIni lora("[lora]\nlora_alpha = 16\n");
  EXPECT_TRUE(has(config_error({"--config", lora.path()}), "lora_alpha is LlamaFactory's and TRL's name for lora.alpha."));
  testing::TempIni trl("[train]\nmax_length = 16\n");
  EXPECT_TRUE(has(config_error({"--config", trl.path()}), "max_length is TRL's name for data.cutoff_len."));
}

TEST(LlamaFactoryYaml, ShardtunesOwnKeysMayBeWrittenInIt) {
  TempYaml yaml("learning_rate: 1e-4\ndist.timeout_s: 90\n");
  const auto parsed = parse({"--config", yaml.path()});
  EXPECT_EQ(parsed.config.dist.timeout_s, 90.0);
  EXPECT_EQ(parsed.origins.at("dist.timeout_s"), yaml.path() + ":2");
}

TEST(ResolvedConfig, FromAYamlItRerunsAsTheSameConfigAndSaysWhereEachKeyCameFrom) {
  TempYaml yaml(kLoraDpo);
  const auto first = parse({"--config", yaml.path()});
  const std::string annotated = format_resolved_config(first.config, first.origins);
  EXPECT_TRUE(has(annotated, "lr = 5e-06  # " + yaml.path() + ":34 (learning_rate): peak learning rate\n")) << annotated;
  EXPECT_TRUE(has(annotated, "beta1 = 0.9  # default: ")) << annotated;
  testing::TempIni resolved(annotated);
  const auto second = parse({"--config", resolved.path()});
  EXPECT_EQ(format_resolved_config(second.config), format_resolved_config(first.config));
}

TEST(LlamaFactoryKeys, TheTableListsEveryKeyOnce) {
  const std::vector<std::string> keys = llamafactory_keys();
  std::set<std::string> unique(keys.begin(), keys.end());
  EXPECT_EQ(unique.size(), keys.size());
  // Every key of the seed workload's command line is one this reads.
  for (const char* key :
       {"stage", "do_train", "model_name_or_path", "preprocessing_num_workers", "finetuning_type", "template",
        "flash_attn", "dataset_dir", "dataset", "cutoff_len", "learning_rate", "num_train_epochs", "max_samples",
        "per_device_train_batch_size", "gradient_accumulation_steps", "lr_scheduler_type", "max_grad_norm",
        "logging_steps", "save_steps", "warmup_steps", "optim", "packing", "report_to", "output_dir", "fp16",
        "plot_loss", "ddp_timeout", "include_num_input_tokens_seen", "pref_beta", "pref_ftx", "pref_loss", "val_size",
        "eval_strategy", "eval_steps", "per_device_eval_batch_size", "deepspeed"}) {
    EXPECT_TRUE(is_llamafactory_key(key)) << key;
  }
}


// TRL: `shardtune train dpo --config x.yaml`, as `trl dpo --config x.yaml`.
TEST(TrlYaml, ADpoConfigWithItsDefaultsAndALocalJsonlFile) {
  TempYaml data("");  // the dataset file: its content is prep's business
  TempYaml yaml("model_name_or_path: /models/qwen\ndataset_name: " + data.path() +
                "\nuse_peft: true\nlora_target_modules: all-linear\nbeta: 0.05\nmax_length: 2048\nbf16: true\n"
                "gradient_checkpointing: true\nreport_to: none\n");
  const auto parsed = parse({"dpo", "--config", yaml.path()});
  const TrainConfig& c = parsed.config;
  EXPECT_EQ(c.train.stage, Stage::dpo);
  EXPECT_EQ(c.train.method, TrainMethod::lora);
  EXPECT_EQ(c.prep.dataset, data.path());
  EXPECT_EQ(c.prep.dataset_dir, "");
  EXPECT_EQ(c.dpo.beta, 0.05);
  EXPECT_EQ(c.data.cutoff_len, 2048);
  EXPECT_EQ(c.train.dtype, ComputeDtype::bf16);
  EXPECT_EQ(c.optim.lr, 1e-6);  // DPOConfig's default
  EXPECT_EQ(c.train.micro_batch, 8);
  EXPECT_EQ(c.train.log_every, 10);
  EXPECT_EQ(c.lora.r, 16);
  EXPECT_EQ(c.lora.alpha, 32.0);
  EXPECT_EQ(c.lora.dropout, 0.05);
  EXPECT_FALSE(c.lora.double_quant);
  EXPECT_EQ(c.lora.target_modules, kEveryLoraTarget);
  EXPECT_EQ(c.dpo.logged_logps, LoggedLogps::sum);
  EXPECT_TRUE(c.ckpt.export_hf);
  EXPECT_EQ(parsed.origins.at("optim.lr"), "TRL's default (learning_rate)");
  EXPECT_EQ(parsed.origins.at("dpo.beta"), yaml.path() + ":5 (beta)");
  EXPECT_EQ(parsed.origins.at("train.stage"), "TRL: trl dpo");
}

TEST(TrlYaml, EachTrainerHasItsOwnLearningRateAndStage) {
  TempYaml yaml("model_name_or_path: /m\n");
  EXPECT_EQ(parse({"sft", "--config", yaml.path()}).config.optim.lr, 2e-5);
  EXPECT_EQ(parse({"kto", "--config", yaml.path()}).config.train.stage, Stage::kto);
  const auto reward = parse({"reward", yaml.path(), "--center_rewards_coefficient", "0.01"});
  EXPECT_EQ(reward.config.train.stage, Stage::rm);
  EXPECT_EQ(reward.config.optim.lr, 1e-4);
  EXPECT_EQ(reward.config.rm.center_rewards_coefficient, 0.01);
  EXPECT_EQ(parse({"kto", yaml.path(), "--beta", "0.2"}).config.kto.beta, 0.2);
  EXPECT_EQ(parse({"dpo", yaml.path(), "--use_peft", "--load_in_4bit"}).config.train.method, TrainMethod::qlora);
}

TEST(TrlYaml, ADatasetFolderIsReadByItsSplitAndParquetOrHubNamesAreRefusedWithTheFix) {
  char folder[] = "/tmp/st_trl_XXXXXX";
  ASSERT_NE(mkdtemp(folder), nullptr);
  std::ofstream(std::string(folder) + "/train.jsonl") << "";
  TempYaml yaml(std::string("model_name_or_path: /m\ndataset_name: ") + folder + "\n");
  EXPECT_EQ(parse({"sft", yaml.path()}).config.prep.dataset, std::string(folder) + "/train.jsonl");
  EXPECT_TRUE(has(config_error({"sft", yaml.path(), "--dataset_train_split", "validation"}),
                  "the folder has no validation.jsonl or validation.json (dataset_train_split)"));
  std::ofstream(std::string(folder) + "/validation-00000.parquet") << "";
  const std::string parquet = config_error({"sft", yaml.path(), "--dataset_train_split", "validation"});
  EXPECT_TRUE(has(parquet, "holds Parquet")) << parquet;
  EXPECT_TRUE(has(parquet, "p.read_parquet(sys.argv[1]).to_json(sys.argv[2], orient='records', lines=True)")) << parquet;
  std::filesystem::remove_all(folder);
  const std::string hub = config_error({"sft", "--model_name_or_path", "/m", "--dataset_name", "trl-lib/ultrafeedback"});
  EXPECT_TRUE(has(hub, "dataset_name = trl-lib/ultrafeedback: not a local file or folder; datasets are not "
                       "downloaded: hf download trl-lib/ultrafeedback --repo-type dataset --local-dir data/ultrafeedback, "
                       "then name data/ultrafeedback"))
      << hub;
}

// Every LlamaFactory and TRL example names its model by hub id: refused with the line, the
// command that fetches it and the value to write there.
TEST(ForeignYaml, AHubModelIdIsRefusedWithTheDownloadCommandAndTheLine) {
  TempYaml yaml("### model\nmodel_name_or_path: meta-llama/Llama-3.1-8B-Instruct\nstage: dpo\n");
  const std::string lf = config_error({yaml.path()});
  EXPECT_TRUE(has(lf, yaml.path() + ":2: model_name_or_path = meta-llama/Llama-3.1-8B-Instruct: a Hugging Face hub id, "
                                    "not a local directory; shardtune downloads nothing: fetch it with `hf download "
                                    "meta-llama/Llama-3.1-8B-Instruct --local-dir models/Llama-3.1-8B-Instruct`, then "
                                    "write model_name_or_path: models/Llama-3.1-8B-Instruct on this line"))
      << lf;
  const std::string trl = config_error({"dpo", "--model_name_or_path", "Qwen/Qwen3-0.6B"});
  EXPECT_TRUE(has(trl, "command line: model_name_or_path = Qwen/Qwen3-0.6B: a Hugging Face hub id")) << trl;
  EXPECT_TRUE(has(trl, "`hf download Qwen/Qwen3-0.6B --local-dir models/Qwen3-0.6B`")) << trl;
  // Local paths are not hub ids, whether they exist or not: the model's loader names those.
  for (const char* path : {"/models/qwen3", "./qwen/x", "models/qwen3/x", "qwen3", "~/m/x"}) {
    EXPECT_EQ(config_error({"dpo", "--model_name_or_path", path}), "(no error)") << path;
  }
}

TEST(TrlYaml, KeysItDoesNotTrainAreRefusedByName) {
  TempYaml yaml("model_name_or_path: /m\nloss_type: exo_pair\nuse_dora: true\nlearning_rat: 1\n");
  const std::string error = config_error({"dpo", yaml.path()});
  EXPECT_TRUE(has(error, "cannot run as TRL means them")) << error;
  EXPECT_TRUE(has(error, yaml.path() + ":2: loss_type = exo_pair: not trained here")) << error;
  EXPECT_TRUE(has(error, yaml.path() + ":3: use_dora = true: DoRA is not trained here")) << error;
  EXPECT_TRUE(has(error, yaml.path() + ":4: learning_rat is not a TRL key shardtune reads. Did you mean learning_rate?"))
      << error;
  EXPECT_TRUE(has(config_error({"dpo", "--config", "x.ini"}), "reads TRL's config (a YAML or TRL's flags), not an INI"));
}

}  // namespace
}  // namespace st

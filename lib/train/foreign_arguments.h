// A train-like subcommand's arguments split into shardtune's own and another tool's: a YAML
// config (--config run.yaml, or run.yaml alone as `llamafactory-cli train run.yaml` takes it) and
// flags named as that tool names them (--learning_rate 1e-4), translated by LlamaFactory's
// vocabulary, or by TRL's after a trainer word (`train dpo --config x.yaml`, as `trl dpo
// --config x.yaml`) (foreign_config.h).
#pragma once

#include <string>
#include <vector>

#include "config/config_parser.h"
#include "config/config_schema.h"

namespace st {

struct ForeignArguments {
  std::vector<std::string> native_args;  // for parse_arguments
  std::vector<ConfigSetting> settings;   // translated (and native keys written in the YAML)
  std::vector<std::string> notes;        // keys with no meaning here, one line each
};

// Throws ConfigError for an unknown flag (with the nearest of the subcommand's options,
// shardtune's keys and LlamaFactory's), and for what translate_llamafactory refuses.
ForeignArguments split_foreign_arguments(const std::vector<std::string>& args,
                                         const po::options_description& command_options, const ConfigSchema& schema);

}  // namespace st

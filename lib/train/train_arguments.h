// A subcommand's arguments as a TrainConfig (defaults < --config INI < --section.key=value),
// its --help, and the resolved config written back as INI, so a run can be reproduced with
// --config <run>/config.resolved.ini.
#pragma once

#include <string>
#include <vector>

#include "config/config_parser.h"
#include "train/train_config.h"

namespace st {

struct ConfigArguments : ParsedArguments {
  TrainConfig config;
  std::vector<std::string> notes;  // another tool's keys with no meaning here: what shardtune does instead
};

// `command_options` are the subcommand's own flags, parsed alongside the config keys. A YAML
// config and flags named as LlamaFactory names them are translated (foreign_arguments.h).
ConfigArguments parse_config_arguments(const std::vector<std::string>& args,
                                       const po::options_description& command_options);

// --help text: usage, the subcommand's options, then every config section with defaults.
std::string config_help(const std::string& usage, const po::options_description& command_options);

std::string format_resolved_config(const TrainConfig& config);
// The same with each key's origin in its comment ("run.yaml:12 (learning_rate)", "default");
// data.train left to prep.dataset where that is set, so the file reruns as it is.
std::string format_resolved_config(const TrainConfig& config, const ConfigOrigins& origins);
// Writes atomically (temporary file + rename): a crash never leaves half a config behind.
void write_resolved_config(const TrainConfig& config, const ConfigOrigins& origins, const std::string& path);

}  // namespace st

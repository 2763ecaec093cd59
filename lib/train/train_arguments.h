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
};

// `command_options` are the subcommand's own flags, parsed alongside the config keys.
ConfigArguments parse_config_arguments(const std::vector<std::string>& args,
                                       const po::options_description& command_options);

// --help text: usage, the subcommand's options, then every config section with defaults.
std::string config_help(const std::string& usage, const po::options_description& command_options);

std::string format_resolved_config(const TrainConfig& config);
// Writes atomically (temporary file + rename): a crash never leaves half a config behind.
void write_resolved_config(const TrainConfig& config, const std::string& path);

}  // namespace st

// Turns a subcommand's arguments into a TrainConfig: defaults, then the INI file given with
// --config, then --section.key=value overrides (command line beats file beats defaults).
// Unknown keys and malformed values throw ConfigError naming the key and file:line.
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <map>
#include <string>
#include <vector>

#include "config/train_config.h"

namespace st {

namespace po = boost::program_options;

// Where each explicitly set key came from: "optim.lr" -> "run.ini:7" or "command line".
using ConfigOrigins = std::map<std::string, std::string>;

struct ConfigArguments {
  TrainConfig config;
  po::variables_map command_values;  // the subcommand's own options (e.g. --dry-run)
  ConfigOrigins origins;
  std::string config_file;           // empty when no --config was given
  bool help = false;                 // --help: print config_help() and stop
};

// `command_options` are the subcommand's own flags, parsed alongside the config keys.
ConfigArguments parse_config_arguments(const std::vector<std::string>& args,
                                       const po::options_description& command_options);

// --help text: usage, the subcommand's options, then every config section with defaults.
std::string config_help(const std::string& usage, const po::options_description& command_options);

}  // namespace st

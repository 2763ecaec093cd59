// Parses a subcommand's arguments against a ConfigSchema: defaults, then the INI file given
// with --config, then --section.key=value overrides (command line beats file beats defaults).
// Unknown keys, malformed values and words outside an enum's table throw ConfigError naming
// the key and file:line.
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <string>
#include <vector>

#include "config/config_schema.h"

namespace st {

struct ParsedArguments {
  po::variables_map command_values;  // the subcommand's own options (e.g. --dry-run)
  ConfigOrigins origins;
  std::string config_file;           // empty when no --config was given
  bool help = false;                 // --help: print the help and stop (nothing else was parsed)
};

// A key set from another source than the INI file and --section.key (another tool's config,
// translated): "optim.lr" = "0.0001", from "run.yaml:12 (learning_rate)".
struct ConfigSetting {
  std::string name, value, origin;
};

// Writes the parsed keys into the fields `schema` is bound to. `command_options` are the
// subcommand's own flags, parsed alongside the config keys. `settings` (one per key) rank
// below the command line and above the INI file; a value they cannot hold is refused naming
// its origin.
ParsedArguments parse_arguments(const std::vector<std::string>& args, const po::options_description& command_options,
                                ConfigSchema& schema, const std::vector<ConfigSetting>& settings = {});

// --help text: usage, the subcommand's options, then every section with defaults.
std::string arguments_help(const std::string& usage, const po::options_description& command_options,
                           const ConfigSchema& schema);

// The schema's current values as an INI file, one commented key per line, after `header`;
// with `origins`, each line's comment begins with where its value came from ("default" else).
std::string format_config_file(const ConfigSchema& schema, const std::string& header,
                               const ConfigOrigins* origins = nullptr);

// " Did you mean --optim.lr?": the shortest of `names` that `unknown` begins, else the nearest
// (edit distance <= 3), else "".
std::string did_you_mean(const std::string& unknown, const std::vector<std::string>& names, const std::string& prefix);

}  // namespace st

#include "train/train_arguments.h"

#include <filesystem>

#include "train/train_config_schema.h"
#include "util/build_info.h"
#include "util/errors.h"
#include "util/file_io.h"

namespace st {

ConfigArguments parse_config_arguments(const std::vector<std::string>& args,
                                       const po::options_description& command_options) {
  ConfigArguments result;
  ConfigSchema schema;
  bind_train_config(schema, result.config);
  static_cast<ParsedArguments&>(result) = parse_arguments(args, command_options, schema);
  return result;
}

std::string config_help(const std::string& usage, const po::options_description& command_options) {
  TrainConfig defaults;
  ConfigSchema schema;
  bind_train_config(schema, defaults);
  return arguments_help(usage, command_options, schema);
}

std::string format_resolved_config(const TrainConfig& config) {
  TrainConfig copy = config;
  ConfigSchema schema;
  bind_train_config(schema, copy);
  return format_config_file(schema, "# Resolved configuration of shardtune " + shardtune_version() +
                                        ": defaults, --config file and\n# --section.key overrides merged. "
                                        "Rerun with --config <this file>.\n");
}

void write_resolved_config(const TrainConfig& config, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), error);
  if (error) {
    throw IoError(target.parent_path().string() + ": cannot create the run directory (" +
                  error.message() + "). Check train.output_dir and its permissions.");
  }
  try {
    write_file_atomically(path, format_resolved_config(config));
  } catch (const IoError& error) {
    throw IoError(std::string(error.what()) + ". Check free space and permissions of train.output_dir.");
  }
}

}  // namespace st

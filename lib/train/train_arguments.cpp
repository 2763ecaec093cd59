#include "train/train_arguments.h"

#include <filesystem>

#include "train/foreign_arguments.h"
#include "train/foreign_config.h"
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
  add_foreign_aliases(schema);
  ForeignArguments foreign = split_foreign_arguments(args, command_options, schema);
  static_cast<ParsedArguments&>(result) =
      parse_arguments(foreign.native_args, command_options, schema, foreign.settings);
  result.notes = std::move(foreign.notes);
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

std::string format_resolved_config(const TrainConfig& config, const ConfigOrigins& origins) {
  TrainConfig copy = config;
  if (copy.prep.wanted()) copy.data.train.clear();  // prep.dataset names it again on a rerun
  ConfigSchema schema;
  bind_train_config(schema, copy);
  return format_config_file(schema,
                            "# Resolved configuration of shardtune " + shardtune_version() +
                                ". Each comment begins with where its value came from\n# (default, a file:line "
                                "and the key written there, the command line). Rerun with --config <this file>.\n",
                            &origins);
}

void write_resolved_config(const TrainConfig& config, const ConfigOrigins& origins, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), error);
  if (error) {
    throw IoError(target.parent_path().string() + ": cannot create the run directory (" +
                  error.message() + "). Check train.output_dir and its permissions.");
  }
  try {
    write_file_atomically(path, format_resolved_config(config, origins));
  } catch (const IoError& error) {
    throw IoError(std::string(error.what()) + ". Check free space and permissions of train.output_dir.");
  }
}

}  // namespace st

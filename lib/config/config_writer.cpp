// INI rendering of a TrainConfig through the schema, one commented key per line.
#include "config/config_writer.h"

#include <filesystem>

#include "config/config_schema.h"
#include "util/build_info.h"
#include "util/errors.h"
#include "util/file_io.h"

namespace st {

std::string format_resolved_config(const TrainConfig& config) {
  TrainConfig copy = config;
  const ConfigSchema schema(copy);
  std::string text = "# Resolved configuration of shardtune " + shardtune_version() +
                     ": defaults, --config file and\n# --section.key overrides merged. "
                     "Rerun with --config <this file>.\n";
  std::string section;
  for (const auto& field : schema.fields()) {
    if (field.section != section) {
      section = field.section;
      text += "\n[" + section + "]\n";
    }
    text += field.key + " = " + field.current_value() + "  # " + field.help + "\n";
  }
  return text;
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

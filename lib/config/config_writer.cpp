// INI rendering of a TrainConfig through the schema, one commented key per line.
#include "config/config_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "config/config_schema.h"
#include "util/build_info.h"
#include "util/errors.h"

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
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << format_resolved_config(config);
    out.flush();
    if (!out) {
      throw IoError(temporary + ": cannot write the resolved config (" + std::strerror(errno) +
                    "). Check free space and permissions of train.output_dir.");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    throw IoError(path + ": cannot rename " + temporary + " into place (" +
                  std::strerror(errno) + ").");
  }
}

}  // namespace st

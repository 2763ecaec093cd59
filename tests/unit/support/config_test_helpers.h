// Helpers for config tests: temporary INI files and parsing with no subcommand options.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "train/train_arguments.h"
#include "util/errors.h"

namespace st::testing {

// A uniquely named file under /tmp holding `text` (its name ending in `suffix`), removed when
// the object dies.
class TempIni {
 public:
  explicit TempIni(const std::string& text, const std::string& suffix = ".ini") {
    std::string name = "/tmp/st_config_XXXXXX" + suffix;
    const int fd = mkstemps(name.data(), static_cast<int>(suffix.size()));
    close(fd);
    path_ = name;
    std::ofstream(path_) << text;
  }
  ~TempIni() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline ConfigArguments parse(std::vector<std::string> args) {
  static const po::options_description no_options;
  return parse_config_arguments(args, no_options);
}

// A YAML config file under /tmp, removed when the object dies.
struct TempYaml : TempIni {
  explicit TempYaml(const std::string& text) : TempIni(text, ".yaml") {}
};

// What parsing `args` refuses (a ConfigError's text), or "(no error)".
inline std::string config_error(const std::vector<std::string>& args) {
  try {
    parse(args);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "(no error)";
}

inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace st::testing

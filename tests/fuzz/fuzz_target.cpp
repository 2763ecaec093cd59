#include "fuzz_target.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace st::fuzz {
namespace fs = std::filesystem;

std::map<std::string, TargetFunction>& targets() {
  static std::map<std::string, TargetFunction> registry;
  return registry;
}

std::string scratch_directory() {
  // Never destroyed: the exit handler that removes the directory runs after static destructors.
  static const std::string* directory = [] {
    const fs::path path = fs::temp_directory_path() / ("st_fuzz_" + std::to_string(getpid()));
    fs::create_directories(path);
    std::atexit([] {
      std::error_code ignored;
      fs::remove_all(*directory, ignored);
    });
    return new std::string(path.string());
  }();
  return *directory;
}

std::string scratch_file(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = scratch_directory() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

std::string fixture(const std::string& name) { return std::string(ST_FUZZ_FIXTURES) + "/" + name; }

}  // namespace st::fuzz

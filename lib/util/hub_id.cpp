#include "util/hub_id.h"

#include <cctype>
#include <filesystem>

namespace st {

bool looks_like_hub_id(const std::string& path) {
  const size_t slash = path.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 >= path.size()) return false;
  if (path.find('/', slash + 1) != std::string::npos) return false;
  if (path[0] == '.' || path[0] == '~' || path[slash + 1] == '.') return false;
  for (const char c : path) {
    const bool allowed = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/';
    if (!allowed) return false;
  }
  std::error_code error;
  return !std::filesystem::exists(path, error);
}

std::string hub_download_directory(const std::string& id, bool dataset) {
  return std::string(dataset ? "data/" : "models/") + id.substr(id.find('/') + 1);
}

std::string hub_download_command(const std::string& id, bool dataset) {
  return "hf download " + id + (dataset ? " --repo-type dataset" : "") + " --local-dir " +
         hub_download_directory(id, dataset);
}

std::string hub_id_refusal(const std::string& id) {
  return "a Hugging Face hub id, not a local directory; shardtune downloads nothing: fetch it with `" +
         hub_download_command(id) + "`";
}

}  // namespace st

#include "hf/safetensors_checkpoint.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "util/errors.h"
#include "util/file_io.h"

namespace st {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";

std::map<std::string, std::string> read_weight_map(const fs::path& index_path) {
  std::ifstream in(index_path);
  json index;
  try {
    index = json::parse(in);
  } catch (const json::exception& error) {
    throw ModelError(index_path.string() + ": not valid JSON (" + error.what() + ")");
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    throw ModelError(index_path.string() + ": field 'weight_map' (tensor name -> file) is missing");
  }
  std::map<std::string, std::string> weight_map;
  for (const auto& [name, file] : index["weight_map"].items()) {
    if (!file.is_string() || !is_plain_file_name(file.get<std::string>())) {
      throw ModelError(index_path.string() + ": weight_map['" + name + "'] = " + file.dump() +
                       " must be a file name in the checkpoint's directory (no '/', not '..')");
    }
    weight_map[name] = file.get<std::string>();
  }
  return weight_map;
}

}  // namespace

SafetensorsCheckpoint::SafetensorsCheckpoint(const std::string& directory)
    : directory_(directory) {
  const fs::path root(directory);
  const fs::path index_path = root / kIndexName;
  if (fs::exists(index_path)) {
    std::map<std::string, const SafetensorsFile*> by_file;
    for (const auto& [name, file_name] : read_weight_map(index_path)) {
      auto& file = by_file[file_name];
      if (file == nullptr) {
        const fs::path shard = root / file_name;
        std::error_code unreadable;  // e.g. a name too long for the file system
        if (!fs::exists(shard, unreadable)) {
          throw ModelError(index_path.string() + ": lists '" + file_name +
                           "', which does not exist in " + directory + "; copy the whole checkpoint");
        }
        files_.push_back(std::make_unique<SafetensorsFile>(shard.string()));
        file = files_.back().get();
      }
      if (file->find(name) == nullptr) {
        throw ModelError(file->path() + ": has no tensor '" + name + "' although " +
                         index_path.string() + " says so");
      }
      owner_[name] = file;
    }
  } else if (fs::exists(root / kSingleName)) {
    files_.push_back(std::make_unique<SafetensorsFile>((root / kSingleName).string()));
    for (const auto& entry : files_.back()->entries()) owner_[entry.name] = files_.back().get();
  } else {
    throw ModelError(directory + ": holds neither " + kSingleName + " nor " + kIndexName +
                     "; model.path must be a Hugging Face checkpoint directory (safetensors)");
  }
}

const SafetensorsFile* SafetensorsCheckpoint::file_of(const std::string& name) const {
  const auto found = owner_.find(name);
  if (found != owner_.end()) return found->second;
  const auto view = view_owner_.find(name);
  return view == view_owner_.end() ? nullptr : view->second;
}

void SafetensorsCheckpoint::add_view(const std::string& name, const std::string& stored, int64_t first,
                                     std::vector<int64_t> shape) {
  const SafetensorsFile& owner = require(stored);
  for (auto& file : files_) {
    if (file.get() != &owner) continue;
    file->add_view(name, stored, first, std::move(shape));
    view_owner_[name] = file.get();
    return;
  }
}

const SafetensorsFile& SafetensorsCheckpoint::require(const std::string& name) const {
  const SafetensorsFile* file = file_of(name);
  if (file == nullptr) {
    throw ModelError(directory_ + ": checkpoint has no tensor '" + name +
                     "'; it does not match its config.json");
  }
  return *file;
}

const SafetensorsEntry& SafetensorsCheckpoint::entry(const std::string& name) const {
  return *require(name).find(name);
}

at::Tensor SafetensorsCheckpoint::read(const std::string& name) const {
  return require(name).read(name);
}

at::Tensor SafetensorsCheckpoint::read_range(const std::string& name, int64_t first,
                                             int64_t count) const {
  return require(name).read_range(name, first, count);
}

void SafetensorsCheckpoint::read_range_into(const std::string& name, int64_t first, int64_t count,
                                            const at::Tensor& out) const {
  require(name).read_range_into(name, first, count, out);
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> names;
  for (const auto& [name, file] : owner_) names.push_back(name);
  return names;
}

}  // namespace st

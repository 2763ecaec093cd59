// A Hugging Face checkpoint directory: model.safetensors, or shards listed by
// model.safetensors.index.json. Looks tensors up by name across the files.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hf/safetensors_file.h"

namespace st {

class SafetensorsCheckpoint {
 public:
  // Throws ModelError naming the directory/file when the index or a shard is missing or malformed.
  explicit SafetensorsCheckpoint(const std::string& directory);

  const std::string& directory() const { return directory_; }
  // The file holding `name`, or nullptr.
  const SafetensorsFile* file_of(const std::string& name) const;
  // Throws ModelError naming the tensor and the checkpoint when absent.
  const SafetensorsEntry& entry(const std::string& name) const;
  at::Tensor read(const std::string& name) const;
  at::Tensor read_range(const std::string& name, int64_t first, int64_t count) const;
  void read_range_into(const std::string& name, int64_t first, int64_t count, const at::Tensor& out) const;
  std::vector<std::string> names() const;  // what the files store (no views)
  // `name` for a piece of the stored tensor `stored` (SafetensorsFile::add_view).
  void add_view(const std::string& name, const std::string& stored, int64_t first, std::vector<int64_t> shape);

 private:
  const SafetensorsFile& require(const std::string& name) const;

  std::string directory_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsFile*> owner_;
  std::map<std::string, const SafetensorsFile*> view_owner_;
};

}  // namespace st

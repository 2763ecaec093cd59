#include "hf/safetensors_writer.h"

#include <ATen/ATen.h>
#include <fcntl.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "hf/safetensors_dtype.h"
#include "util/errors.h"
#include "util/file_io.h"

namespace st {
namespace {

using nlohmann::json;

std::string shard_name(size_t index, size_t count) {
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", index + 1, count);
  return name;
}

}  // namespace

uint64_t TensorSpec::bytes() const {
  uint64_t count = 1;
  for (int64_t size : shape) count *= static_cast<uint64_t>(size);
  return count * at::elementSize(dtype);
}

SafetensorsLayout::SafetensorsLayout(const std::vector<TensorSpec>& specs) : specs_(specs) {
  json header = json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t cursor = 0;
  std::map<std::string, uint64_t> relative;
  for (const TensorSpec& spec : specs_) {
    const std::optional<SafetensorsDtype> dtype = safetensors_dtype(spec.dtype);
    if (!dtype) {
      throw ModelError("safetensors: tensor '" + spec.name + "' has unsupported dtype " +
                       std::string(c10::toString(spec.dtype)) + " (write F32, BF16 or F16)");
    }
    if (relative.count(spec.name) != 0) {
      throw ModelError("safetensors: tensor '" + spec.name + "' appears twice");
    }
    header[spec.name] = {{"dtype", enum_name(*dtype)}, {"shape", spec.shape},
                         {"data_offsets", {cursor, cursor + spec.bytes()}}};
    relative[spec.name] = cursor;
    cursor += spec.bytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  header_.resize(8);
  uint64_t length = text.size();
  for (int i = 0; i < 8; ++i) header_[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  header_ += text;
  for (const auto& [name, offset] : relative) offsets_[name] = header_.size() + offset;
  file_size_ = header_.size() + cursor;
}

uint64_t SafetensorsLayout::offset_of(const std::string& name) const {
  const auto found = offsets_.find(name);
  if (found == offsets_.end()) throw ModelError("safetensors layout has no tensor '" + name + "'");
  return found->second;
}

json ShardedLayout::index_json() const {
  uint64_t total = 0;
  json weight_map = json::object();
  for (size_t i = 0; i < files.size(); ++i) {
    for (const TensorSpec& spec : files[i].specs()) {
      weight_map[spec.name] = file_names[i];
      total += spec.bytes();
    }
  }
  return {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
}

ShardedLayout plan_sharded_layout(const std::vector<TensorSpec>& specs, uint64_t max_shard_bytes) {
  std::vector<std::vector<TensorSpec>> groups(1);
  uint64_t group_bytes = 0;
  for (const TensorSpec& spec : specs) {
    if (!groups.back().empty() && group_bytes + spec.bytes() > max_shard_bytes) {
      groups.emplace_back();
      group_bytes = 0;
    }
    groups.back().push_back(spec);
    group_bytes += spec.bytes();
  }
  ShardedLayout layout;
  for (size_t i = 0; i < groups.size(); ++i) {
    layout.file_names.push_back(groups.size() == 1 ? "model.safetensors"
                                                   : shard_name(i, groups.size()));
    layout.files.emplace_back(groups[i]);
    for (const TensorSpec& spec : groups[i]) layout.file_of[spec.name] = i;
  }
  return layout;
}

void create_safetensors_file(const std::string& path, const SafetensorsLayout& layout) {
  WritableFile file(path, O_WRONLY | O_CREAT | O_TRUNC);
  file.resize(layout.file_size());
  file.pwrite_all(layout.header().data(), layout.header().size(), 0);
}

void write_tensor_at(const std::string& path, uint64_t offset, const at::Tensor& tensor) {
  const at::Tensor bytes = tensor.contiguous();
  WritableFile file(path, O_WRONLY);
  file.pwrite_all(bytes.data_ptr(), bytes.numel() * bytes.element_size(), offset);
}

void write_safetensors_checkpoint(const std::string& directory,
                                  const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                                  uint64_t max_shard_bytes) {
  namespace fs = std::filesystem;
  fs::create_directories(directory);
  std::vector<TensorSpec> specs;
  for (const auto& [name, tensor] : tensors) {
    specs.push_back({name, tensor.scalar_type(), tensor.sizes().vec()});
  }
  const ShardedLayout layout = plan_sharded_layout(specs, max_shard_bytes);
  std::vector<std::string> temporary;
  for (size_t i = 0; i < layout.files.size(); ++i) {
    temporary.push_back((fs::path(directory) / (layout.file_names[i] + ".tmp")).string());
    create_safetensors_file(temporary.back(), layout.files[i]);
  }
  for (const auto& [name, tensor] : tensors) {
    const size_t file = layout.file_of.at(name);
    write_tensor_at(temporary[file], layout.files[file].offset_of(name), tensor.cpu());
  }
  for (size_t i = 0; i < layout.files.size(); ++i) {
    WritableFile(temporary[i], O_WRONLY).sync();
    fs::rename(temporary[i], fs::path(directory) / layout.file_names[i]);
  }
  if (layout.has_index()) {
    const fs::path index = fs::path(directory) / "model.safetensors.index.json";
    write_file_atomically(index.string(), layout.index_json().dump(2) + "\n");
  }
}

}  // namespace st

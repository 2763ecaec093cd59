// Writing safetensors: a layout computed up front (header padded to 8 bytes, __metadata__
// {"format":"pt"}, every tensor's byte offset), so several writers can pwrite their tensors at
// precomputed offsets; sharding at a size limit into model-0000k-of-0000n.safetensors + index.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

namespace st {

struct TensorSpec {
  std::string name;
  at::ScalarType dtype = at::kFloat;
  std::vector<int64_t> shape;

  uint64_t bytes() const;
};

class SafetensorsLayout {
 public:
  explicit SafetensorsLayout(const std::vector<TensorSpec>& specs);  // data in the given order

  const std::string& header() const { return header_; }  // length prefix + padded JSON
  // Absolute file offset of `name`'s first byte. Throws ModelError when absent.
  uint64_t offset_of(const std::string& name) const;
  uint64_t file_size() const { return file_size_; }
  const std::vector<TensorSpec>& specs() const { return specs_; }

 private:
  std::vector<TensorSpec> specs_;
  std::map<std::string, uint64_t> offsets_;
  std::string header_;
  uint64_t file_size_ = 0;
};

struct ShardedLayout {
  std::vector<std::string> file_names;  // model.safetensors, or model-0000k-of-0000n.safetensors
  std::vector<SafetensorsLayout> files;
  std::map<std::string, size_t> file_of;  // tensor name -> index into files

  bool has_index() const { return files.size() > 1; }
  nlohmann::json index_json() const;  // model.safetensors.index.json
};

// Greedy in order: a new file starts when the next tensor would pass `max_shard_bytes` (a tensor
// larger than the limit gets a file of its own).
ShardedLayout plan_sharded_layout(const std::vector<TensorSpec>& specs, uint64_t max_shard_bytes);

// Creates `path` at its final size with the header written; tensors follow via write_tensor_at.
void create_safetensors_file(const std::string& path, const SafetensorsLayout& layout);
// Writes a contiguous CPU tensor's bytes at `offset` of an existing file (pwrite).
void write_tensor_at(const std::string& path, uint64_t offset, const at::Tensor& tensor);

// Writes `tensors` (any device; written in their own dtype) as a checkpoint in `directory`,
// sharded at `max_shard_bytes`. Files appear whole or not at all (written as .tmp, renamed).
void write_safetensors_checkpoint(const std::string& directory,
                                  const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                                  uint64_t max_shard_bytes);

}  // namespace st

// One .safetensors file, memory-mapped, its header validated up front: length bound, JSON,
// dtype (F32/BF16/F16), shape x element size == data_offsets span, offsets in bounds and
// non-overlapping. Any element range of a tensor can be read without touching the rest.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hf/safetensors_header.h"
#include "util/mapped_file.h"

namespace st {

class SafetensorsFile {
 public:
  // Throws ModelError naming the file (and the tensor) for every malformed header
  // (parse_safetensors_header).
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // nullptr when absent. Finds views (add_view) too.
  const SafetensorsEntry* find(const std::string& name) const;
  // `name` for elements [first, first + numel(shape)) of the stored tensor `stored`: one piece of
  // a tensor another layout stores whole (one expert of a stacked [E, ...] tensor). Reads of
  // `name` read those bytes; entries() lists only what the file stores. Throws ModelError naming
  // the file when the range is not inside `stored`.
  void add_view(const std::string& name, const std::string& stored, int64_t first, std::vector<int64_t> shape);
  // The whole tensor, shaped, in its file dtype (a copy). Throws ModelError when absent.
  at::Tensor read(const std::string& name) const;
  // Elements [first, first + count) of the flattened tensor, as a 1-D copy in its file dtype.
  at::Tensor read_range(const std::string& name, int64_t first, int64_t count) const;
  // The same range into `out` (contiguous, `count` elements, any float dtype): no extra copy
  // when the dtypes match. The pages read are released from this process afterwards.
  void read_range_into(const std::string& name, int64_t first, int64_t count, const at::Tensor& out) const;

 private:
  const SafetensorsEntry& check_range(const std::string& name, int64_t first, int64_t count) const;
  const SafetensorsEntry& require(const std::string& name) const;
  const uint8_t* data_section() const { return file_.data() + 8 + header_bytes_; }

  MappedFile file_;
  uint64_t header_bytes_ = 0;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, size_t> index_;
  std::map<std::string, SafetensorsEntry> views_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace st

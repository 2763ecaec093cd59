#include "hf/safetensors_file.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>

#include "hf/safetensors_dtype.h"
#include "util/errors.h"

namespace st {

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(path) {
  SafetensorsHeader header = parse_safetensors_header(file_.data(), file_.size(), file_.path());
  header_bytes_ = header.header_bytes;
  entries_ = std::move(header.entries);
  metadata_ = std::move(header.metadata);
  for (size_t i = 0; i < entries_.size(); ++i) index_[entries_[i].name] = i;
}

const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
  const auto found = index_.find(name);
  if (found != index_.end()) return &entries_[found->second];
  const auto view = views_.find(name);
  return view == views_.end() ? nullptr : &view->second;
}

void SafetensorsFile::add_view(const std::string& name, const std::string& stored, int64_t first,
                               std::vector<int64_t> shape) {
  const SafetensorsEntry& whole = require(stored);
  SafetensorsEntry view{name, whole.dtype, std::move(shape), 0, 0};
  const int64_t count = view.numel();
  if (first < 0 || count < 0 || first + count > whole.numel()) {
    throw ModelError(path() + ": tensor '" + stored + "' has " + std::to_string(whole.numel()) +
                     " elements, too few to hold '" + name + "' at element " + std::to_string(first) +
                     "; its shape does not match config.json");
  }
  const uint64_t bytes = safetensors_element_bytes(whole.dtype);
  view.begin = whole.begin + static_cast<uint64_t>(first) * bytes;
  view.end = view.begin + static_cast<uint64_t>(count) * bytes;
  views_[name] = std::move(view);
}

const SafetensorsEntry& SafetensorsFile::require(const std::string& name) const {
  const SafetensorsEntry* entry = find(name);
  if (entry == nullptr) throw ModelError(path() + ": has no tensor '" + name + "'");
  return *entry;
}

at::Tensor SafetensorsFile::read(const std::string& name) const {
  const SafetensorsEntry& entry = require(name);
  return read_range(name, 0, entry.numel()).view(entry.shape);
}

const SafetensorsEntry& SafetensorsFile::check_range(const std::string& name, int64_t first, int64_t count) const {
  const SafetensorsEntry& entry = require(name);
  if (first < 0 || count < 0 || count > entry.numel() - first) {
    throw ModelError(path() + ": tensor '" + name + "': " + std::to_string(count) + " elements from element " +
                     std::to_string(first) + " are outside its " + std::to_string(entry.numel()) + " elements");
  }
  return entry;
}

at::Tensor SafetensorsFile::read_range(const std::string& name, int64_t first, int64_t count) const {
  const at::Tensor out = at::empty({count}, at::TensorOptions().dtype(scalar_type(check_range(name, first, count).dtype)));
  read_range_into(name, first, count, out);
  return out;
}

void SafetensorsFile::read_range_into(const std::string& name, int64_t first, int64_t count,
                                      const at::Tensor& out) const {
  const SafetensorsEntry& entry = check_range(name, first, count);
  const at::ScalarType dtype = scalar_type(entry.dtype);
  const size_t element = at::elementSize(dtype);
  const uint8_t* source = data_section() + entry.begin + first * element;
  // In blocks, releasing each block's pages after its copy: the resident file pages stay small
  // however large the range.
  constexpr int64_t kBlockBytes = 8 << 20;
  const int64_t block = std::max<int64_t>(1, kBlockBytes / static_cast<int64_t>(element));
  const bool same_dtype = out.scalar_type() == dtype && out.is_contiguous();
  for (int64_t done = 0; done < count; done += block) {
    const int64_t n = std::min(block, count - done);
    const uint8_t* from = source + done * element;
    if (same_dtype) {
      std::memcpy(static_cast<uint8_t*>(out.data_ptr()) + done * element, from, n * element);
    } else {
      out.narrow(0, done, n).copy_(at::from_blob(const_cast<uint8_t*>(from), {n}, at::TensorOptions().dtype(dtype)));
    }
    file_.release(static_cast<size_t>(from - file_.data()), n * element);
  }
}

}  // namespace st

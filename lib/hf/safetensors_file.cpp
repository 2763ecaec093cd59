#include "hf/safetensors_file.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "hf/safetensors_dtype.h"
#include "util/errors.h"

namespace st {
namespace {

using nlohmann::json;

uint64_t read_le_u64(const uint8_t* bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

SafetensorsEntry parse_entry(const std::string& path, const std::string& name, const json& value,
                             uint64_t data_bytes) {
  auto fail = [&](const std::string& problem) -> ModelError {
    return ModelError(path + ": tensor '" + name + "': " + problem +
                      "; the file is damaged or not a safetensors checkpoint, re-export it");
  };
  if (!value.is_object() || !value.contains("dtype") || !value.contains("shape") ||
      !value.contains("data_offsets")) {
    throw fail("header entry needs dtype, shape and data_offsets");
  }
  SafetensorsEntry entry;
  entry.name = name;
  const json& dtype = value.at("dtype");
  const auto type = dtype.is_string() ? scalar_type_from_safetensors(dtype.get<std::string>())
                                      : std::nullopt;
  if (!type) {
    throw ModelError(path + ": tensor '" + name + "' has dtype " + dtype.dump() +
                     "; shardtune reads F32, BF16 and F16 (and U8, bitsandbytes' 4-bit codes; convert the checkpoint to "
                     "one of them)");
  }
  entry.dtype = *type;
  for (const json& size : value.at("shape")) {
    if (!size.is_number_unsigned()) throw fail("shape must hold non-negative integers");
    entry.shape.push_back(size.get<int64_t>());
  }
  const json& offsets = value.at("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    throw fail("data_offsets must be [begin, end]");
  }
  entry.begin = offsets[0].get<uint64_t>();
  entry.end = offsets[1].get<uint64_t>();
  if (entry.begin > entry.end || entry.end > data_bytes) {
    throw fail("data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) +
               "] fall outside the " + std::to_string(data_bytes) + "-byte data section");
  }
  const uint64_t expected = static_cast<uint64_t>(entry.numel()) * at::elementSize(entry.dtype);
  if (entry.end - entry.begin != expected) {
    throw fail("shape and dtype need " + std::to_string(expected) + " bytes but data_offsets span " +
               std::to_string(entry.end - entry.begin));
  }
  return entry;
}

}  // namespace

int64_t SafetensorsEntry::numel() const {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return count;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(path) {
  const std::string& name = file_.path();
  if (file_.size() < 8) {
    throw ModelError(name + ": truncated (" + std::to_string(file_.size()) +
                     " bytes, shorter than the 8-byte header length)");
  }
  header_bytes_ = read_le_u64(file_.data());
  if (header_bytes_ > kMaxHeaderBytes || header_bytes_ > file_.size() - 8) {
    throw ModelError(name + ": header length " + std::to_string(header_bytes_) +
                     " exceeds the file size (" + std::to_string(file_.size()) +
                     " bytes) or the 100 MiB limit; the file is truncated or not safetensors");
  }
  json header;
  try {
    header = json::parse(file_.data() + 8, file_.data() + 8 + header_bytes_);
  } catch (const json::parse_error& error) {
    throw ModelError(name + ": header is not valid JSON (" + error.what() + ")");
  }
  if (!header.is_object()) throw ModelError(name + ": header must be a JSON object");
  const uint64_t data_bytes = file_.size() - 8 - header_bytes_;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      for (const auto& [meta_key, meta_value] : value.items()) {
        if (meta_value.is_string()) metadata_[meta_key] = meta_value.get<std::string>();
      }
      continue;
    }
    entries_.push_back(parse_entry(name, key, value, data_bytes));
  }
  std::vector<const SafetensorsEntry*> by_offset;
  for (const auto& entry : entries_) {
    if (entry.end > entry.begin) by_offset.push_back(&entry);  // empty tensors take no bytes
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const auto* a, const auto* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i]->begin < by_offset[i - 1]->end) {
      throw ModelError(name + ": tensors '" + by_offset[i - 1]->name + "' and '" +
                       by_offset[i]->name + "' overlap in the data section; re-export the file");
    }
  }
  for (size_t i = 0; i < entries_.size(); ++i) index_[entries_[i].name] = i;
}

const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
  const auto found = index_.find(name);
  return found == index_.end() ? nullptr : &entries_[found->second];
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
  if (first < 0 || count < 0 || first + count > entry.numel()) {
    throw ModelError(path() + ": tensor '" + name + "': element range [" + std::to_string(first) +
                     ", " + std::to_string(first + count) + ") is outside its " +
                     std::to_string(entry.numel()) + " elements");
  }
  return entry;
}

at::Tensor SafetensorsFile::read_range(const std::string& name, int64_t first, int64_t count) const {
  const at::Tensor out = at::empty({count}, at::TensorOptions().dtype(check_range(name, first, count).dtype));
  read_range_into(name, first, count, out);
  return out;
}

void SafetensorsFile::read_range_into(const std::string& name, int64_t first, int64_t count,
                                      const at::Tensor& out) const {
  const SafetensorsEntry& entry = check_range(name, first, count);
  const size_t element = at::elementSize(entry.dtype);
  const uint8_t* source = data_section() + entry.begin + first * element;
  // In blocks, releasing each block's pages after its copy: the resident file pages stay small
  // however large the range.
  constexpr int64_t kBlockBytes = 8 << 20;
  const int64_t block = std::max<int64_t>(1, kBlockBytes / static_cast<int64_t>(element));
  const bool same_dtype = out.scalar_type() == entry.dtype && out.is_contiguous();
  for (int64_t done = 0; done < count; done += block) {
    const int64_t n = std::min(block, count - done);
    const uint8_t* from = source + done * element;
    if (same_dtype) {
      std::memcpy(static_cast<uint8_t*>(out.data_ptr()) + done * element, from, n * element);
    } else {
      out.narrow(0, done, n).copy_(at::from_blob(const_cast<uint8_t*>(from), {n}, at::TensorOptions().dtype(entry.dtype)));
    }
    file_.release(static_cast<size_t>(from - file_.data()), n * element);
  }
}

}  // namespace st

#include "hf/safetensors_header.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

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
  if (!dtype.is_string() || !find_enum(dtype.get<std::string>(), entry.dtype)) {
    throw ModelError(path + ": tensor '" + name + "' has dtype " + dtype.dump() +
                     "; shardtune reads F32, BF16 and F16 (and U8, bitsandbytes' 4-bit codes; convert the checkpoint to "
                     "one of them)");
  }
  const json& shape = value.at("shape");
  if (!shape.is_array()) throw fail("shape must be a list of non-negative integers");
  for (const json& size : shape) {
    if (!size.is_number_unsigned() || size.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) {
      throw fail("shape must hold non-negative integers");
    }
    entry.shape.push_back(size.get<int64_t>());
  }
  // The byte count, checked as the dims multiply up: past 2^63 no data section can hold it.
  const bool empty = std::count(entry.shape.begin(), entry.shape.end(), 0) > 0;
  uint64_t bytes = empty ? 0 : safetensors_element_bytes(entry.dtype);
  bool overflow = false;
  for (int64_t size : entry.shape) overflow = overflow || __builtin_mul_overflow(bytes, uint64_t(size), &bytes);
  if (overflow || bytes > uint64_t(std::numeric_limits<int64_t>::max())) {
    throw fail("shape " + shape.dump() + " needs more than 2^63 bytes");
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
  if (entry.end - entry.begin != bytes) {
    throw fail("shape and dtype need " + std::to_string(bytes) + " bytes but data_offsets span " +
               std::to_string(entry.end - entry.begin));
  }
  return entry;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& value) {
  if (!value.is_object()) {
    throw ModelError(path + ": __metadata__ must be an object of strings, not " + std::string(value.type_name()) +
                     "; the file is damaged or not a safetensors checkpoint, re-export it");
  }
  std::map<std::string, std::string> metadata;
  for (const auto& [key, text] : value.items()) {
    if (text.is_string()) metadata[key] = text.get<std::string>();  // other values: not the format's, ignored
  }
  return metadata;
}

}  // namespace

uint64_t safetensors_element_bytes(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::F32: return 4;
    case SafetensorsDtype::BF16:
    case SafetensorsDtype::F16: return 2;
    case SafetensorsDtype::U8: return 1;
  }
  return 0;
}

int64_t SafetensorsEntry::numel() const {
  if (std::count(shape.begin(), shape.end(), 0) > 0) return 0;  // the other dims may multiply past 2^63
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return count;
}

SafetensorsHeader parse_safetensors_header(const uint8_t* file, uint64_t file_bytes, const std::string& path) {
  if (file_bytes < 8) {
    throw ModelError(path + ": truncated (" + std::to_string(file_bytes) +
                     " bytes, shorter than the 8-byte header length)");
  }
  SafetensorsHeader header;
  header.header_bytes = read_le_u64(file);
  if (header.header_bytes > SafetensorsHeader::kMaxHeaderBytes || header.header_bytes > file_bytes - 8) {
    throw ModelError(path + ": header length " + std::to_string(header.header_bytes) +
                     " exceeds the file size (" + std::to_string(file_bytes) +
                     " bytes) or the 100 MiB limit; the file is truncated or not safetensors");
  }
  json parsed;
  try {
    parsed = json::parse(file + 8, file + 8 + header.header_bytes);
  } catch (const json::exception& error) {
    throw ModelError(path + ": header is not valid JSON (" + error.what() + ")");
  }
  if (!parsed.is_object()) throw ModelError(path + ": header must be a JSON object");
  const uint64_t data_bytes = file_bytes - 8 - header.header_bytes;
  for (const auto& [key, value] : parsed.items()) {
    if (key == "__metadata__") {
      header.metadata = parse_metadata(path, value);
    } else {
      header.entries.push_back(parse_entry(path, key, value, data_bytes));
    }
  }
  std::vector<const SafetensorsEntry*> by_offset;
  for (const auto& entry : header.entries) {
    if (entry.end > entry.begin) by_offset.push_back(&entry);  // empty tensors take no bytes
  }
  std::sort(by_offset.begin(), by_offset.end(), [](const auto* a, const auto* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i]->begin < by_offset[i - 1]->end) {
      throw ModelError(path + ": tensors '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name +
                       "' overlap in the data section; re-export the file");
    }
  }
  return header;
}

}  // namespace st

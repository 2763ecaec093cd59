// The header of a .safetensors file, parsed and validated without reading any tensor (and
// without libtorch, so the fuzz targets build it alone): the 8-byte length, the JSON, and every
// tensor's dtype, shape and data_offsets, also the tensors shardtune never reads. All size
// arithmetic on the header's numbers is checked, so a hostile header gets a ModelError, never
// an overflow or an out-of-bounds offset.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "util/enum_names.h"

namespace st {

// The dtypes shardtune reads: floats, and U8 for bitsandbytes' 4-bit codes and their state.
enum class SafetensorsDtype { F32, BF16, F16, U8 };
template <>
struct EnumNames<SafetensorsDtype> {
  static constexpr NamedValue<SafetensorsDtype> table[] = {{SafetensorsDtype::F32, "F32"},
                                                           {SafetensorsDtype::BF16, "BF16"},
                                                           {SafetensorsDtype::F16, "F16"},
                                                           {SafetensorsDtype::U8, "U8"}};
};
uint64_t safetensors_element_bytes(SafetensorsDtype dtype);

struct SafetensorsEntry {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;
  int64_t numel() const;  // fits: end - begin == numel x element bytes was checked
};

struct SafetensorsHeader {
  static constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the format's own limit
  uint64_t header_bytes = 0;                               // the JSON's length
  std::vector<SafetensorsEntry> entries;                   // in the header's order
  std::map<std::string, std::string> metadata;             // __metadata__
};

// The header of the `file_bytes`-byte file that starts at `file`. Throws ModelError naming
// `path` (and the tensor and field) for a length past the file or the 100 MiB limit, JSON that
// does not parse or is not an object of entries, an unknown dtype, a shape that is not a list
// of non-negative integers or whose byte count overflows, offsets outside the data section, a
// span that does not match shape x dtype, and tensors that overlap.
SafetensorsHeader parse_safetensors_header(const uint8_t* file, uint64_t file_bytes, const std::string& path);

}  // namespace st

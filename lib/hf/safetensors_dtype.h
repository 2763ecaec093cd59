// The safetensors dtypes shardtune reads and writes (F32, BF16, F16; U8 for the packed codes and
// quantization state of bitsandbytes 4-bit checkpoints) and their libtorch types.
#pragma once

#include <c10/core/ScalarType.h>

#include <optional>
#include <string>

namespace st {

inline std::optional<at::ScalarType> scalar_type_from_safetensors(const std::string& dtype) {
  if (dtype == "F32") return at::kFloat;
  if (dtype == "BF16") return at::kBFloat16;
  if (dtype == "F16") return at::kHalf;
  if (dtype == "U8") return at::kByte;
  return std::nullopt;
}

inline std::string safetensors_dtype_name(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return "F32";
    case at::kBFloat16: return "BF16";
    case at::kHalf: return "F16";
    case at::kByte: return "U8";
    default: return "";
  }
}

}  // namespace st

// The safetensors dtypes shardtune reads and writes (safetensors_header.h) as libtorch types.
#pragma once

#include <c10/core/ScalarType.h>

#include <optional>

#include "hf/safetensors_header.h"

namespace st {

inline at::ScalarType scalar_type(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::F32: return at::kFloat;
    case SafetensorsDtype::BF16: return at::kBFloat16;
    case SafetensorsDtype::F16: return at::kHalf;
    case SafetensorsDtype::U8: return at::kByte;
  }
  return at::kFloat;
}

// nullopt for a type safetensors files of shardtune do not hold.
inline std::optional<SafetensorsDtype> safetensors_dtype(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return SafetensorsDtype::F32;
    case at::kBFloat16: return SafetensorsDtype::BF16;
    case at::kHalf: return SafetensorsDtype::F16;
    case at::kByte: return SafetensorsDtype::U8;
    default: return std::nullopt;
  }
}

}  // namespace st

// The projections a LoRA adapter can wrap (lora.target_modules), apart from the parameter
// tables so that the config schema reads them without libtorch.
#pragma once

#include <cstddef>

#include "util/enum_names.h"

namespace st {

// lora.target_modules words: the projections an adapter can wrap (the table row that names one
// says which weight).
enum class LoraTarget { q, k, v, o, gate, up, down };
template <>
struct EnumNames<LoraTarget> {
  static constexpr NamedValue<LoraTarget> table[] = {{LoraTarget::q, "q"},       {LoraTarget::k, "k"},
                                                     {LoraTarget::v, "v"},       {LoraTarget::o, "o"},
                                                     {LoraTarget::gate, "gate"}, {LoraTarget::up, "up"},
                                                     {LoraTarget::down, "down"}};
};
inline constexpr size_t kLoraTargetCount = 7;

}  // namespace st

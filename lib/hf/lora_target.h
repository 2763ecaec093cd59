// The projections a LoRA adapter can wrap (lora.target_modules), apart from the parameter
// tables so that the config schema reads them without libtorch.
#pragma once

#include <cstddef>

#include "util/enum_names.h"

namespace st {

// lora.target_modules words: the projections an adapter can wrap (the table row that names one
// says which weight), PEFT's module names less "_proj": attention's and the MLP's, and a Gated
// DeltaNet layer's (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, out = out_proj), and a shared
// expert's sigmoid gate (shared_expert_gate; gate, up and down adapt the shared expert's
// projections on such a model, as PEFT's module names match them there). A target wraps the layers
// that hold its projection (a hybrid's attention targets its attention layers).
enum class LoraTarget { q, k, v, o, gate, up, down, in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, out, shared_expert_gate };
template <>
struct EnumNames<LoraTarget> {
  static constexpr NamedValue<LoraTarget> table[] = {
      {LoraTarget::q, "q"},       {LoraTarget::k, "k"},   {LoraTarget::v, "v"},
      {LoraTarget::o, "o"},       {LoraTarget::gate, "gate"}, {LoraTarget::up, "up"},
      {LoraTarget::down, "down"}, {LoraTarget::in_proj_qkv, "in_proj_qkv"}, {LoraTarget::in_proj_z, "in_proj_z"},
      {LoraTarget::in_proj_b, "in_proj_b"}, {LoraTarget::in_proj_a, "in_proj_a"}, {LoraTarget::out, "out"},
      {LoraTarget::shared_expert_gate, "shared_expert_gate"}};
};
inline constexpr size_t kLoraTargetCount = 13;
// Every projection (LlamaFactory's lora_target all, PEFT's all-linear): those the model has.
inline constexpr const char* kEveryLoraTarget =
    "q,k,v,o,gate,up,down,in_proj_qkv,in_proj_z,in_proj_b,in_proj_a,out,shared_expert_gate";

}  // namespace st

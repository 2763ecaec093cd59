// LoRA adapters on a Llama layer's projections (Hu et al. 2021; PEFT's LoraLayer): a projection
// W x becomes W x + scale * B (A dropout(x)), A [r, in], B [out, r], scale = alpha / r (or
// alpha / sqrt(r) with rslora). The adapters carry PEFT's tensor names, so the FSDP engine
// shards them as units and the export writes them as they are. Projections are separate
// matrices here (no fused qkv / gate_up), so each target is its own pair.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/hf_names.h"
#include "model/model_config.h"
#include "util/enum_names.h"

namespace st {

// lora.target_modules words; PEFT's module names are peft_module_name().
enum class LoraTarget { q, k, v, o, gate, up, down };
template <>
struct EnumNames<LoraTarget> {
  static constexpr NamedValue<LoraTarget> table[] = {{LoraTarget::q, "q"},       {LoraTarget::k, "k"},
                                                     {LoraTarget::v, "v"},       {LoraTarget::o, "o"},
                                                     {LoraTarget::gate, "gate"}, {LoraTarget::up, "up"},
                                                     {LoraTarget::down, "down"}};
};
inline constexpr size_t kLoraTargetCount = 7;

// [lora] section (train.method = lora).
struct LoraOptions {
  int64_t r = 16;                          // adapter rank
  double alpha = 32.0;                     // scaling numerator
  double dropout = 0.0;                    // on the adapter's input, training forwards only
  std::string target_modules = "q,k,v,o";  // comma-separated LoraTarget words
  bool rslora = false;                     // scale = alpha / sqrt(r) (rank-stabilised)
  uint64_t seed = 42;                      // A's init (B starts at zero)
};

// The words of lora.target_modules in model order, without repeats. Throws ConfigError naming
// the key and the unknown word.
std::vector<LoraTarget> lora_targets(const std::string& target_modules);
double lora_scale(const LoraOptions& options);

const char* peft_module_name(LoraTarget target);  // "q_proj", .., "down_proj"
// "model.layers.<i>.self_attn.q_proj.weight": the base weight a target adapts.
std::string adapted_weight_name(int64_t layer, LoraTarget target);
// PEFT's saved names: "base_model.model.model.layers.<i>.self_attn.q_proj.lora_A.weight".
std::string lora_a_name(int64_t layer, LoraTarget target);
std::string lora_b_name(int64_t layer, LoraTarget target);
// Per layer: A then B of each target, in model order. A [r, in] is initialised as PEFT does
// (kaiming-uniform, bound 1 / sqrt(in)), B [out, r] to zero.
std::vector<ParamSpec> lora_layer_params(const ModelConfig& config, int64_t layer,
                                         const std::vector<LoraTarget>& targets, int64_t r);

// One projection's adapter; undefined tensors = not adapted.
struct LoraPair {
  at::Tensor a, b;
};
using LoraPairs = std::array<LoraPair, kLoraTargetCount>;

// How a forward applies the adapters: dropout only in a differentiated pass, with a seed that a
// recompute of the same micro-batch repeats (the mask is a hash of seed, layer, target and
// element, so it needs no generator state).
struct AdapterForward {
  double scale = 0.0;
  double dropout = 0.0;
  int64_t dropout_seed = 0;
};

// x [.., in] -> scale * B A dropout(x) [.., out], in x's dtype. `stream` tells projections apart.
at::Tensor lora_delta(const at::Tensor& x, const LoraPair& pair, const AdapterForward& adapter, int64_t stream);
// W + scale * B A for rows [row_begin, row_end) of W (fp32): what a merged export holds.
at::Tensor merged_rows(const at::Tensor& weight_rows, const LoraPair& pair, double scale, int64_t row_begin);

}  // namespace st

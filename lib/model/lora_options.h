// The [lora] section of a run (train.method = lora or qlora): rank, scale, targets, dropout and
// how QLoRA holds the frozen base. Apart from lora.h so that the config schema reads it
// without libtorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hf/lora_target.h"
#include "util/enum_names.h"

namespace st {

// How QLoRA holds the frozen base (lora.quant_type; train.method = qlora): nf4 = bitsandbytes'
// 4-bit NormalFloat (model/nf4.h).
enum class QuantType { nf4 };
template <>
struct EnumNames<QuantType> {
  static constexpr NamedValue<QuantType> table[] = {{QuantType::nf4, "nf4"}};
};

// [lora] section (train.method = lora or qlora).
struct LoraOptions {
  // The keys of [lora]: their help, unit and range are declared once, in train/train_config_schema.cpp.
  int64_t r = 16;
  double alpha = 32.0;
  double dropout = 0.0;
  std::string target_modules = "q,k,v,o";
  bool rslora = false;
  uint64_t seed = 42;
  QuantType quant_type = QuantType::nf4;  // qlora only, as double_quant
  bool double_quant = true;
  bool host_embedding = true;
};

// The words of lora.target_modules in model order, without repeats. Throws ConfigError naming
// the key and the unknown word.
std::vector<LoraTarget> lora_targets(const std::string& target_modules);
// `targets` as lora.target_modules writes them ("q,v").
std::string lora_target_words(const std::vector<LoraTarget>& targets);
double lora_scale(const LoraOptions& options);

}  // namespace st

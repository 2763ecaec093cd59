// A LoRA run's adapters as a PEFT adapter directory (adapter_config.json +
// adapter_model.safetensors under PEFT's tensor names), which PeftModel.from_pretrained and
// vLLM's LoRA support load on top of the base model. Adapters are small: they are assembled on
// every rank and rank 0 writes them, into <output>.tmp renamed when complete.
#pragma once

#include <ATen/core/Tensor.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "fsdp/unit_layout.h"

namespace st {

// adapter_config.json from a checkpoint's adapter identity (CheckpointManifest::adapter): rank,
// alpha, rslora, targets as PEFT module names, dropout, and the base model's path. A
// mixture-of-experts `model`'s MLP targets are its experts, written as PEFT 0.21 writes them
// (hf/param_table.h lora_layer_params): target_parameters gate_up_proj and down_proj, gate_up's
// rank and alpha doubled in rank_pattern and alpha_pattern.
// `saved_modules`: the base modules trained in full (PEFT's modules_to_save, e.g. a reward
// model's "score", which makes the task SEQ_CLS).
nlohmann::json peft_adapter_config(const nlohmann::json& adapter, const ModelConfig& model,
                                   const std::vector<std::string>& saved_modules = {});

struct PeftExportResult {
  uint64_t bytes = 0;  // tensor bytes
  int tensors = 0;
};

// Collective over `world`. `units` and `masters` are the adapter units and this rank's fp32
// shards (shard `shard`; `writes` false for replicas of a shard written elsewhere).
PeftExportResult export_peft_adapter(const std::string& output, const ModelConfig& model,
                                     const std::vector<UnitLayout>& units,
                                     const std::vector<at::Tensor>& masters, int shard, bool writes,
                                     Communicator& world, const nlohmann::json& adapter, at::ScalarType dtype,
                                     bool replace);

}  // namespace st

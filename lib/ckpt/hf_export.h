// The consolidated Hugging Face export, written in parallel without gathering the model on
// any rank: rank 0 creates model-0000k-of-0000n.safetensors at their final sizes with their
// headers (plus config.json, the index, and generation/tokenizer files of the base model);
// then every rank converts its shard of each unit to the export dtype and pwrite()s the pieces
// at the offsets the layout fixes. Written into <output>.tmp and renamed when complete.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ckpt/checkpoint_writer.h"
#include "ckpt/ckpt_options.h"
#include "distributed/communicator.h"
#include "fsdp/unit_layout.h"
#include "hf/model_config.h"
#include "hf/safetensors_writer.h"

namespace st {

struct HfExportOptions {
  at::ScalarType dtype = at::kBFloat16;  // kBFloat16 | kFloat
  uint64_t max_shard_bytes = 5'000'000'000;
  std::string base_model_dir;  // config.json, generation_config.json, tokenizer files copied from here ("" = none)
  bool replace = false;        // replace an existing output directory
};

at::ScalarType export_scalar_type(ExportDtype dtype);
// Every parameter of `units` in layout order, as `dtype`: the tensors an export writes.
std::vector<TensorSpec> export_specs(const std::vector<UnitLayout>& units, at::ScalarType dtype);

struct HfExportResult {
  uint64_t bytes = 0;  // tensor bytes of the whole model
  int files = 0;
  double seconds = 0.0;
};

// Collective over `world`. `masters` is this rank's fp32 [shard_numel] per unit of `units`;
// `place` says which shard that is and whether this rank writes it.
HfExportResult export_hf_model(const std::string& output, const ModelConfig& config,
                               const std::vector<UnitLayout>& units, const std::vector<at::Tensor>& masters,
                               const ShardPlace& place, Communicator& world, const HfExportOptions& options);

}  // namespace st

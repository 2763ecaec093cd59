// Creating a rank's shard of a unit's flat parameter, and viewing a gathered flat unit as the
// named parameters the model blocks take. A rank reads only the element ranges it owns from the
// safetensors files, so no rank ever holds the whole model.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fsdp/unit_layout.h"
#include "hf/safetensors_checkpoint.h"
#include "model/llama_blocks.h"

namespace st {

// Parameters a run adds to the checkpoint's (a reward model's new score head): seeded as
// init_unit_shard seeds them, not read.
struct NewParams {
  std::vector<std::string> names;
  uint64_t seed = 0;
};

// fp32 [shard_numel] on CPU; the padding past the unit's numel is zero. Throws ModelError naming
// the file and tensor when a parameter is missing or its shape does not follow config.json.
at::Tensor load_unit_shard(const UnitLayout& unit, int rank, const SafetensorsCheckpoint& checkpoint,
                           const NewParams& fresh = {});
// The same for a preset: parameter-seeded init (init_parameter), so values do not depend on the
// number of ranks.
at::Tensor init_unit_shard(const UnitLayout& unit, int rank, uint64_t seed);

// flat [>= numel] -> the unit's parameters as views, by HF name.
TensorMap unit_param_views(const UnitLayout& unit, const at::Tensor& flat);

}  // namespace st

// A sharded checkpoint as a whole model on every rank, for inference (`shardtune generate`):
// the masters read unsharded, and for a LoRA checkpoint its base re-read (the fingerprint
// checked) with W + scale B A folded into every adapted weight. Also the base checks that a
// merged export shares.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include "ckpt/checkpoint_manifest.h"
#include "distributed/communicator.h"
#include "model/model_source.h"

namespace st {

// Where a LoRA run read its base: a model directory, or a preset with seeded weights.
struct AdapterBase {
  std::string path, preset;
  uint64_t seed = 0;
};

// The scale of a LoRA checkpoint's adapters (its manifest's "adapter" record).
double checkpoint_adapter_scale(const CheckpointManifest& manifest);

// Where the base of a LoRA checkpoint was read from, after checking it is still there and is
// the model the adapters were trained on (its fingerprint); throws ModelError naming the fix.
// `command` prefixes the messages ("export --merge"); `alternative`, when given, is offered
// as the other way out ("export the adapter alone (no --merge)").
AdapterBase checked_adapter_base(const CheckpointManifest& manifest, const std::string& directory,
                                 const std::string& command, const std::string& alternative = "");

// Collective over `world`: checkpoint `directory` (a step_* directory) as whole tensors on
// every rank, by HF name, in `options`' dtype and device; `directory` of the result is the
// Hugging Face directory the run read (the base's, for LoRA), if it read one.
LoadedModel load_checkpoint_model(const std::string& directory, Communicator& world, const at::TensorOptions& options);

}  // namespace st

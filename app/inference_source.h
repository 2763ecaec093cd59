// Where `generate` and `eval` take their model from: --model DIR, --checkpoint DIR (a LoRA one
// merged onto its base) or --preset NAME, and the tokenizer beside it or from --tokenizer.
#pragma once

#include <ATen/core/TensorBody.h>
#include <boost/program_options.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/command_options.h"
#include "distributed/communicator.h"
#include "model/model_source.h"
#include "tokenizer/tokenizer.h"

namespace st {

// The weights' and activations' dtype (--dtype) on `device`.
at::TensorOptions inference_tensor_options(InferenceDtype dtype, const c10::Device& device);

struct InferenceSource {
  std::string model, checkpoint, preset, tokenizer;
  uint64_t preset_seed = 0;
};

void add_inference_source_options(boost::program_options::options_description& options, InferenceSource& source);
// Throws ConfigError unless exactly one of --model, --checkpoint, --preset is given.
void check_inference_source(const InferenceSource& source, const std::string& command);

struct InferenceModel {
  LoadedModel model;
  std::optional<Tokenizer> tokenizer;  // --tokenizer, else the one beside the model, if any
  std::string fingerprint;             // identifies the weights (results files)
};

// Collective over `communicator` for a checkpoint (its ranks read it together).
InferenceModel load_inference_model(const InferenceSource& source, Communicator& communicator,
                                    const at::TensorOptions& options);

}  // namespace st

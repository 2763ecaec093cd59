#include "hf/model_weights.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include "hf/shape_text.h"
#include "util/errors.h"

namespace st {
namespace {

// FNV-1a of the name, mixed with the run seed by splitmix64: a stable per-parameter stream.
uint64_t parameter_seed(const std::string& name, uint64_t seed) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : name) hash = (hash ^ c) * 1099511628211ull;
  uint64_t z = hash + seed * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

void check_param_against_config(const SafetensorsCheckpoint& checkpoint, const ParamSpec& spec) {
  const SafetensorsFile* file = checkpoint.file_of(spec.name);
  if (file == nullptr) {
    throw ModelError(checkpoint.directory() + ": missing tensor '" + spec.name +
                     "' that config.json implies; the checkpoint and its config.json differ");
  }
  const SafetensorsEntry& entry = *file->find(spec.name);
  if (entry.shape != spec.shape) {
    throw ModelError(file->path() + ": tensor '" + spec.name + "' has shape " +
                     shape_text(entry.shape) + " but config.json implies " +
                     shape_text(spec.shape) +
                     " (check vocab_size, hidden_size, intermediate_size, heads and head_dim)");
  }
}

TensorMap load_hf_weights(const SafetensorsCheckpoint& checkpoint, const ModelConfig& config,
                          const at::TensorOptions& options) {
  TensorMap tensors;
  for (const ParamSpec& spec : all_params(config)) {
    check_param_against_config(checkpoint, spec);
    tensors[spec.name] = checkpoint.read(spec.name).to(options);
  }
  return tensors;
}

at::Tensor init_parameter(const ParamSpec& spec, uint64_t seed) {
  switch (spec.init) {
    case ParamSpec::Init::ones:
    case ParamSpec::Init::plain_ones: return at::ones(spec.shape, at::kFloat);
    case ParamSpec::Init::zeros: return at::zeros(spec.shape, at::kFloat);
    case ParamSpec::Init::normal:
    case ParamSpec::Init::lora_a:
    case ParamSpec::Init::decay_log: break;
  }
  at::Generator generator =
      at::make_generator<at::CPUGeneratorImpl>(parameter_seed(spec.name, seed));
  if (spec.init == ParamSpec::Init::decay_log) {  // transformers' A_log: log U(0.01, 16), decays kept off 0
    return at::empty(spec.shape, at::kFloat).uniform_(0.01, 16.0, generator).log_();
  }
  if (spec.init == ParamSpec::Init::lora_a) {
    // kaiming_uniform_(a = sqrt(5)) over fan_in = in: bound 1 / sqrt(in), as PEFT's A.
    const double bound = 1.0 / std::sqrt(static_cast<double>(spec.shape.at(1)));
    return at::empty(spec.shape, at::kFloat).uniform_(-bound, bound, generator);
  }
  return at::empty(spec.shape, at::kFloat).normal_(0.0, spec.init_std, generator);
}

TensorMap init_preset_weights(const ModelConfig& config, uint64_t seed,
                              const at::TensorOptions& options) {
  TensorMap tensors;
  for (const ParamSpec& spec : all_params(config)) {
    tensors[spec.name] = init_parameter(spec, seed).to(options);
  }
  return tensors;
}

}  // namespace st

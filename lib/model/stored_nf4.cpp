#include "model/stored_nf4.h"

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include "hf/safetensors_dtype.h"
#include "model/nf4.h"
#include "util/errors.h"

namespace st {
namespace {

using nlohmann::json;

std::string quant_state_name(const std::string& name) { return name + ".quant_state.bitsandbytes__nf4"; }

[[noreturn]] void fail(const SafetensorsCheckpoint& checkpoint, const ParamSpec& spec, const std::string& problem) {
  throw ModelError(checkpoint.directory() + ": tensor '" + spec.name + "' " + problem +
                   "; shardtune reads bitsandbytes nf4 weights with blocks of 64 as transformers saves them (or "
                   "point model.path at the full-precision model)");
}

// The quant state's JSON, after checking the format it names.
json quant_state(const SafetensorsCheckpoint& checkpoint, const ParamSpec& spec) {
  const std::string nf4 = quant_state_name(spec.name);
  if (!checkpoint.file_of(nf4)) {
    if (checkpoint.file_of(spec.name + ".quant_state.bitsandbytes__fp4")) fail(checkpoint, spec, "is bitsandbytes fp4, not nf4");
    fail(checkpoint, spec, "has no quant state (" + nf4 + ")");
  }
  const at::Tensor bytes = checkpoint.read(nf4).contiguous();
  const std::string text(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()), static_cast<size_t>(bytes.numel()));
  json state;
  try {
    state = json::parse(text);
  } catch (const json::exception& error) {
    fail(checkpoint, spec, "has a quant state that is not JSON (" + std::string(error.what()) + ")");
  }
  if (state.value("quant_type", "") != "nf4") fail(checkpoint, spec, "has quant_type " + state.value("quant_type", json()).dump());
  if (state.value("blocksize", 0) != kNf4BlockSize) fail(checkpoint, spec, "has blocksize " + state.value("blocksize", json()).dump());
  if (state.value("shape", json()) != json(spec.shape)) {
    fail(checkpoint, spec,
         "has shape " + state.value("shape", json()).dump() + " but config.json gives " + json(spec.shape).dump());
  }
  return state;
}

// `name` must hold `numel` elements of `dtype`.
void check(const SafetensorsCheckpoint& checkpoint, const ParamSpec& spec, const std::string& name,
           at::ScalarType dtype, int64_t numel) {
  if (!checkpoint.file_of(name)) fail(checkpoint, spec, "has no '" + name + "' beside it");
  const SafetensorsEntry& entry = checkpoint.entry(name);
  if (scalar_type(entry.dtype) != dtype || entry.numel() != numel) {
    throw ModelError(checkpoint.directory() + ": tensor '" + name + "' should hold " + std::to_string(numel) + " " +
                     c10::toString(dtype) + " values for " + spec.name + " in nf4, not " +
                     std::to_string(entry.numel()) + " " + c10::toString(scalar_type(entry.dtype)));
  }
}

void check_table(const SafetensorsCheckpoint& checkpoint, const ParamSpec& spec, const std::string& name,
                 const at::Tensor& expected, const char* what) {
  check(checkpoint, spec, name, at::kFloat, expected.numel());
  if ((checkpoint.read(name).to(at::kFloat) - expected).abs().max().item<float>() > 1e-6f) {
    fail(checkpoint, spec, std::string("has a ") + name.substr(name.rfind('.') + 1) + " other than " + what);
  }
}

}  // namespace

bool stored_in_nf4(const SafetensorsCheckpoint& checkpoint, const std::string& name) {
  return checkpoint.file_of(quant_state_name(name)) != nullptr ||
         checkpoint.file_of(name + ".quant_state.bitsandbytes__fp4") != nullptr;  // refused, by name
}

StoredNf4Weight::StoredNf4Weight(const SafetensorsCheckpoint& checkpoint, const ParamSpec& spec)
    : checkpoint_(checkpoint), spec_(spec) {
  const json state = quant_state(checkpoint, spec);
  double_quant_ = state.contains("nested_offset");
  check(checkpoint, spec, spec.name, at::kByte, code_bytes());
  check(checkpoint, spec, spec.name + ".absmax", double_quant_ ? at::kByte : at::kFloat, blocks());
  check_table(checkpoint, spec, spec.name + ".quant_map", at::tensor(at::ArrayRef<float>(kNf4Codes, 16)),
              "the NF4 table");
  if (double_quant_) {
    if (state.value("nested_blocksize", 0) != kAbsmaxBlockSize) fail(checkpoint, spec, "has a nested blocksize other than 256");
    check_table(checkpoint, spec, spec.name + ".nested_quant_map", dynamic_map(), "bitsandbytes' dynamic map");
    check(checkpoint, spec, spec.name + ".nested_absmax", at::kFloat, (blocks() + kAbsmaxBlockSize - 1) / kAbsmaxBlockSize);
    nested_offset_ = state.at("nested_offset").get<float>();
  }
}

int64_t StoredNf4Weight::blocks() const { return nf4_blocks(spec_.numel()); }

int64_t StoredNf4Weight::code_bytes() const { return (spec_.numel() + 1) / 2; }

at::Tensor StoredNf4Weight::nested_absmax() const { return checkpoint_.read(spec_.name + ".nested_absmax").to(at::kFloat); }

at::Tensor StoredNf4Weight::dequantized() const {
  Nf4Tensor stored;
  stored.numel = spec_.numel();
  stored.codes = checkpoint_.read(spec_.name).reshape({-1});
  const at::Tensor absmax = checkpoint_.read(spec_.name + ".absmax").reshape({-1});
  stored.absmax = double_quant_ ? dequantize_absmax({absmax, nested_absmax(), nested_offset_}) : absmax.to(at::kFloat);
  return nf4_dequantize(stored, at::kFloat).view(spec_.shape);
}

}  // namespace st

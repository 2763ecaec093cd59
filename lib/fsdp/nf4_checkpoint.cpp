#include "fsdp/nf4_checkpoint.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "hf/safetensors_dtype.h"
#include "model/nf4.h"
#include "util/errors.h"

namespace st {
namespace {

using nlohmann::json;

class WeightReader {
 public:
  WeightReader(const SafetensorsCheckpoint& checkpoint, const ParamSpec& spec)
      : checkpoint_(checkpoint), spec_(spec), where_(checkpoint.directory() + ": tensor '" + spec.name + "'") {}

  [[noreturn]] void fail(const std::string& problem) const {
    throw ModelError(where_ + " " + problem + "; shardtune reads bitsandbytes nf4 weights with blocks of 64 as "
                     "transformers saves them (or point model.path at the full-precision model)");
  }

  // The quant state's JSON, after checking the format it names.
  json quant_state() const {
    const std::string nf4 = spec_.name + ".quant_state.bitsandbytes__nf4";
    if (!checkpoint_.file_of(nf4)) {
      if (checkpoint_.file_of(spec_.name + ".quant_state.bitsandbytes__fp4")) fail("is bitsandbytes fp4, not nf4");
      fail("has no quant state (" + nf4 + ")");
    }
    const at::Tensor bytes = checkpoint_.read(nf4).contiguous();
    const std::string text(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()), static_cast<size_t>(bytes.numel()));
    json state;
    try {
      state = json::parse(text);
    } catch (const json::exception& error) {
      fail("has a quant state that is not JSON (" + std::string(error.what()) + ")");
    }
    if (state.value("quant_type", "") != "nf4") fail("has quant_type " + state.value("quant_type", json()).dump());
    if (state.value("blocksize", 0) != kNf4BlockSize) fail("has blocksize " + state.value("blocksize", json()).dump());
    if (state.value("shape", json()) != json(spec_.shape)) {
      fail("has shape " + state.value("shape", json()).dump() + " but config.json gives " + json(spec_.shape).dump());
    }
    return state;
  }

  // `name` must hold `numel` elements of `dtype`.
  void check(const std::string& name, at::ScalarType dtype, int64_t numel) const {
    const SafetensorsEntry& entry = checkpoint_.entry(name);
    if (scalar_type(entry.dtype) != dtype || entry.numel() != numel) {
      throw ModelError(checkpoint_.directory() + ": tensor '" + name + "' should hold " + std::to_string(numel) + " " +
                       c10::toString(dtype) + " values for " + spec_.name + " in nf4, not " +
                       std::to_string(entry.numel()) + " " + c10::toString(scalar_type(entry.dtype)));
    }
  }

  void check_table(const std::string& name, const at::Tensor& expected, const char* what) const {
    check(name, at::kFloat, expected.numel());
    if ((checkpoint_.read(name).to(at::kFloat) - expected).abs().max().item<float>() > 1e-6f) {
      fail(std::string("has a ") + name.substr(name.rfind('.') + 1) + " other than " + what);
    }
  }

 private:
  const SafetensorsCheckpoint& checkpoint_;
  const ParamSpec& spec_;
  std::string where_;
};

}  // namespace

at::Tensor read_nf4_unit_shard(const QuantizedUnitLayout& layout, int rank, const SafetensorsCheckpoint& checkpoint,
                               const at::Tensor& dense_values, AbsmaxStatistics& statistics) {
  const int64_t shard_blocks = layout.shard_blocks(), first_block = rank * shard_blocks;
  at::Tensor shard = at::zeros({layout.shard_bytes}, at::kByte);
  statistics = {};
  std::vector<at::Tensor> nested;
  for (const ParamSlot& slot : layout.blocks.params) {
    const ParamSpec& spec = slot.spec;
    const WeightReader reader(checkpoint, spec);
    const json state = reader.quant_state();
    const bool double_quant = state.contains("nested_offset");
    if (double_quant != layout.double_quant) {
      throw ModelError(checkpoint.directory() + ": tensor '" + spec.name + "' has " +
                       (double_quant ? "8-bit (double-quantized)" : "fp32") + " absmax; set lora.double_quant = " +
                       (double_quant ? "true" : "false") + " to read it as stored");
    }
    const int64_t numel = spec.numel(), blocks = nf4_blocks(numel), code_bytes = (numel + 1) / 2;
    reader.check(spec.name, at::kByte, code_bytes);
    reader.check(spec.name + ".absmax", double_quant ? at::kByte : at::kFloat, blocks);
    reader.check_table(spec.name + ".quant_map", at::tensor(at::ArrayRef<float>(kNf4Codes, 16)), "the NF4 table");
    if (double_quant) {
      if (state.value("nested_blocksize", 0) != kAbsmaxBlockSize) reader.fail("has a nested blocksize other than 256");
      reader.check_table(spec.name + ".nested_quant_map", dynamic_map(), "bitsandbytes' dynamic map");
      const std::string nested_name = spec.name + ".nested_absmax";
      reader.check(nested_name, at::kFloat, (blocks + kAbsmaxBlockSize - 1) / kAbsmaxBlockSize);
      nested.push_back(checkpoint.read(nested_name).to(at::kFloat));
      statistics.offsets.push_back(state.at("nested_offset").get<float>());
    }
    // This rank's blocks of this weight.
    const int64_t weight_first = slot.offset / kNf4BlockSize;
    const int64_t begin = std::max(first_block, weight_first);
    const int64_t end = std::min(first_block + shard_blocks, weight_first + blocks);
    if (end <= begin) continue;
    const int64_t local = begin - first_block, from = begin - weight_first, count = end - begin;
    const int64_t bytes = std::min(count * kNf4BlockSize / 2, code_bytes - from * kNf4BlockSize / 2);
    checkpoint.read_range_into(spec.name, from * kNf4BlockSize / 2, bytes,
                               shard.narrow(0, local * kNf4BlockSize / 2, bytes));
    // The last block's padding past the file's bytes: the code of 0 (7), as quantizing the
    // zero-padded tail gives, so a stored weight's shard equals a quantized one byte for byte.
    const int64_t padding = count * kNf4BlockSize / 2 - bytes;
    if (padding > 0) shard.narrow(0, local * kNf4BlockSize / 2 + bytes, padding).fill_(0x77);
    if (double_quant) {
      checkpoint.read_range_into(spec.name + ".absmax", from, count, shard.narrow(0, layout.absmax_begin + local, count));
    } else {
      checkpoint.read_range_into(spec.name + ".absmax", from, count,
                                 shard.narrow(0, layout.absmax_begin + local * 4, count * 4).view(at::kFloat));
    }
  }
  statistics.nested_absmax = nested.empty() ? at::empty({0}, at::kFloat) : at::cat(nested);
  write_dense_section(layout, shard, dense_values);
  return shard;
}

}  // namespace st

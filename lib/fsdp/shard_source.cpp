#include "fsdp/shard_source.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "fsdp/nf4_checkpoint.h"
#include "fsdp/unit_shards.h"
#include "hf/presets.h"
#include "hf/safetensors_checkpoint.h"
#include "util/file_io.h"

namespace st {

ModelConfig model_config_of(const std::string& path, const std::string& preset) {
  return path.empty() ? preset_config(preset) : load_model_config(path);
}

std::string model_source_description(const std::string& path, const std::string& preset, uint64_t seed) {
  return path.empty() ? "preset " + preset + " (seed " + std::to_string(seed) + ")" : path;
}

std::string model_fingerprint(const std::string& path, const std::string& preset, uint64_t seed) {
  if (path.empty()) return model_source_description(path, preset, seed);
  std::vector<std::filesystem::path> weights;
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    if (entry.path().extension() == ".safetensors") weights.push_back(entry.path());
  }
  std::sort(weights.begin(), weights.end());
  std::string fingerprint = "config.json crc32 " + crc32_hex(file_crc32(path + "/config.json"));
  for (const auto& file : weights) {
    fingerprint += "; " + file.filename().string() + " " + std::to_string(std::filesystem::file_size(file)) +
                   " bytes, ends crc32 " + crc32_hex(file_ends_crc32(file.string(), 1 << 20));
  }
  return fingerprint;
}

ModelShards load_model_shards(const std::string& path, const std::string& preset, uint64_t seed,
                              int shard_size, int shard_rank, int64_t shard_multiple) {
  return load_model_shards(model_config_of(path, preset), path, preset, seed, shard_size, shard_rank, shard_multiple);
}

ModelShards load_model_shards(const ModelConfig& model, const std::string& path, const std::string& preset,
                              uint64_t seed, int shard_size, int shard_rank, int64_t shard_multiple) {
  if (path.empty()) {
    ModelShards shards = init_model_shards(model, seed, shard_size, shard_rank, shard_multiple);
    shards.description = model_source_description(path, preset, seed);
    return shards;
  }
  ModelShards shards;
  shards.config = model;
  require_full_precision(shards.config, path);
  shards.units = build_unit_layouts(shards.config, shard_size, shard_multiple);
  const SafetensorsCheckpoint checkpoint(path);
  NewParams fresh{{}, seed};
  const char* score = model_param_name(ModelParam::score);
  if (model.head == ModelHead::score && checkpoint.file_of(score) == nullptr) fresh.names.push_back(score);
  for (const UnitLayout& unit : shards.units) {
    shards.masters.push_back(load_unit_shard(unit, shard_rank, checkpoint, fresh));
  }
  shards.description = model_source_description(path, preset, seed);
  return shards;
}

namespace {

// An adapter run's trained units and this rank's seeded masters of them.
ModelShards fresh_adapters(const ModelConfig& config, std::string description, const LoraOptions& lora,
                           int shard_size, int shard_rank, int64_t shard_multiple) {
  ModelShards shards;
  shards.config = config;
  shards.description = std::move(description);
  shards.units =
      build_adapter_unit_layouts(config, lora_targets(lora.target_modules), lora.r, shard_size, shard_multiple);
  for (const UnitLayout& unit : shards.units) shards.masters.push_back(init_unit_shard(unit, shard_rank, lora.seed));
  return shards;
}

}  // namespace

bool frozen_embedding_on_host(const ModelConfig& config, bool host_embedding, bool on_gpu, int shard_size) {
  return host_embedding && on_gpu && shard_size == 1 && !config.head_reads_embedding();
}

ModelShards adapter_model_shards(ModelShards base, const LoraOptions& lora, at::ScalarType compute_dtype,
                                 const at::Device& device, int shard_rank, int64_t shard_multiple) {
  const int shard_size = static_cast<int>(base.units.front().padded_numel / base.units.front().shard_numel);
  ModelShards shards = fresh_adapters(base.config, base.description, lora, shard_size, shard_rank, shard_multiple);
  shards.base.units = std::move(base.units);
  const bool host_embedding = frozen_embedding_on_host(base.config, lora.host_embedding, device.is_cuda(), shard_size);
  for (at::Tensor& master : base.masters) {
    const bool on_host = host_embedding && shards.base.shards.empty();
    shards.base.shards.push_back(master.to(on_host ? at::Device(at::kCPU) : device, compute_dtype));
    master = at::Tensor();  // the fp32 copy goes before the next unit converts
  }
  return shards;
}

ModelShards qlora_model_shards(const std::string& path, const std::string& preset, uint64_t seed,
                               const LoraOptions& lora, at::ScalarType compute_dtype, const at::Device& device,
                               Communicator& group, int64_t shard_multiple) {
  const int shard_size = group.size(), shard_rank = group.rank();
  const ModelConfig config = model_config_of(path, preset);
  ModelShards shards =
      fresh_adapters(config, model_source_description(path, preset, seed), lora, shard_size, shard_rank, shard_multiple);
  std::optional<SafetensorsCheckpoint> checkpoint;
  if (!path.empty()) checkpoint.emplace(path);
  const auto values_of = [&](const UnitLayout& part) {  // fp32 on the host
    return checkpoint ? load_unit_shard(part, shard_rank, *checkpoint) : init_unit_shard(part, shard_rank, seed);
  };
  const bool stored_in_nf4 = config.weight_storage == WeightStorage::bnb_nf4;
  const bool host_embedding = frozen_embedding_on_host(config, lora.host_embedding, device.is_cuda(), shard_size);
  for (const UnitLayout& unit : build_unit_layouts(config, shard_size)) {
    QuantizedUnit quantized{build_quantized_unit_layout(unit, shard_size, lora.double_quant, compute_dtype), {}};
    const QuantizedUnitLayout& layout = quantized.layout;
    const at::Device where = host_embedding && shards.base.shards.empty() ? at::Device(at::kCPU) : device;
    if (stored_in_nf4) {  // read as stored: no fp32 projection is ever formed
      shards.base.shards.push_back(read_nf4_unit_shard(layout, shard_rank, *checkpoint, values_of(layout.dense),
                                                       quantized.statistics)
                                       .to(where));
      quantized.statistics.nested_absmax = quantized.statistics.nested_absmax.to(where);
    } else {
      shards.base.shards.push_back(quantize_unit_shard(layout, values_of(layout.blocks).to(where),
                                                       values_of(layout.dense).to(where), group, quantized.statistics));
    }
    shards.base.units.push_back(layout.bound);
    shards.base.quantized.push_back(std::move(quantized));
  }
  return shards;
}

ModelShards init_model_shards(const ModelConfig& config, uint64_t seed, int shard_size, int shard_rank,
                              int64_t shard_multiple) {
  ModelShards shards;
  shards.config = config;
  shards.units = build_unit_layouts(config, shard_size, shard_multiple);
  for (const UnitLayout& unit : shards.units) shards.masters.push_back(init_unit_shard(unit, shard_rank, seed));
  shards.description = "seeded init (seed " + std::to_string(seed) + ")";
  return shards;
}

}  // namespace st

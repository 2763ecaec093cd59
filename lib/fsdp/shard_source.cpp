#include "fsdp/shard_source.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "fsdp/nf4_checkpoint.h"
#include "fsdp/unit_shards.h"
#include "hf/presets.h"
#include "hf/expert_checkpoint.h"
#include "hf/safetensors_checkpoint.h"
#include "model/llama_units.h"
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

namespace {

// The parameters `model` has that the checkpoint lacks by design: a new score head (a causal LM
// trained as a reward model), seeded.
NewParams new_params(const ModelConfig& model, const SafetensorsCheckpoint& checkpoint, uint64_t seed) {
  NewParams fresh{{}, seed};
  const char* score = model_param_name(ModelParam::score);
  if (model.head == ModelHead::score && checkpoint.file_of(score) == nullptr) fresh.names.push_back(score);
  return fresh;
}

// An adapter run's unit of base modules trained in full (saved_module_params): their first
// values are the base's (PEFT copies the module), read or seeded under the base's names.
at::Tensor saved_module_shard(const UnitLayout& unit, const ModelConfig& model, const std::string& path,
                              uint64_t seed, int shard_rank) {
  UnitLayout as_base = unit;
  for (ParamSlot& slot : as_base.params) slot.spec.name = model_param_name(slot.spec.key.model);
  if (path.empty()) return init_unit_shard(as_base, shard_rank, seed);
  const SafetensorsCheckpoint checkpoint = open_model_checkpoint(path, model);
  return load_unit_shard(as_base, shard_rank, checkpoint, new_params(model, checkpoint, seed));
}

}  // namespace

ModelShards load_model_shards(const std::string& path, const std::string& preset, uint64_t seed,
                              int shard_size, int shard_rank, int64_t shard_multiple) {
  return load_model_shards(model_config_of(path, preset), path, preset, seed, shard_size, shard_rank, shard_multiple);
}

ModelShards load_model_shards(const ModelConfig& model, const std::string& path, const std::string& preset,
                              uint64_t seed, int shard_size, int shard_rank, int64_t shard_multiple) {
  if (path.empty()) {
    ModelShards shards = init_model_shards(model, seed, shard_size, shard_rank, shard_multiple);
    shards.description = model_source_description(path, preset, seed);
    shards.seed = seed;
    return shards;
  }
  ModelShards shards;
  shards.config = model;
  shards.path = path;
  shards.seed = seed;
  require_full_precision(shards.config, path);
  shards.units = build_unit_layouts(shards.config, shard_size, shard_multiple);
  const SafetensorsCheckpoint checkpoint = open_model_checkpoint(path, model);
  const NewParams fresh = new_params(model, checkpoint, seed);
  for (const UnitLayout& unit : shards.units) {
    shards.masters.push_back(load_unit_shard(unit, shard_rank, checkpoint, fresh));
  }
  shards.description = model_source_description(path, preset, seed);
  return shards;
}

namespace {

// An adapter run's trained units and this rank's masters of them: the adapters seeded, the base
// modules trained in full as the base (`path`, else seeded by `seed`) holds them.
ModelShards fresh_adapters(const ModelConfig& config, std::string description, const LoraOptions& lora,
                           const std::string& path, uint64_t seed, int shard_size, int shard_rank,
                           int64_t shard_multiple) {
  ModelShards shards;
  shards.config = config;
  shards.description = std::move(description);
  shards.path = path;
  shards.seed = seed;
  shards.units =
      build_adapter_unit_layouts(config, lora_targets(lora.target_modules), lora.r, shard_size, shard_multiple);
  for (const UnitLayout& unit : shards.units) {
    // Base modules (model parameters) rather than LoRA pairs: the head unit of a reward model.
    const bool saved_modules = !unit.params.empty() && unit.params.front().spec.key.kind == ParamKey::Kind::model;
    shards.masters.push_back(saved_modules ? saved_module_shard(unit, config, path, seed, shard_rank)
                                           : init_unit_shard(unit, shard_rank, lora.seed));
  }
  return shards;
}

}  // namespace

bool frozen_embedding_on_host(const ModelConfig& config, bool host_embedding, bool on_gpu, int shard_size) {
  return host_embedding && on_gpu && shard_size == 1 && !config.head_reads_embedding();
}

ModelShards adapter_model_shards(ModelShards base, const LoraOptions& lora, at::ScalarType compute_dtype,
                                 const at::Device& device, int shard_rank, int64_t shard_multiple) {
  const int shard_size = static_cast<int>(base.units.front().padded_numel / base.units.front().shard_numel);
  ModelShards shards = fresh_adapters(base.config, base.description, lora, base.path, base.seed, shard_size, shard_rank,
                                      shard_multiple);
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
  return qlora_model_shards(model_config_of(path, preset), path, preset, seed, lora, compute_dtype, device, group,
                            shard_multiple);
}

ModelShards qlora_model_shards(const ModelConfig& config, const std::string& path, const std::string& preset,
                               uint64_t seed, const LoraOptions& lora, at::ScalarType compute_dtype,
                               const at::Device& device, Communicator& group, int64_t shard_multiple) {
  const int shard_size = group.size(), shard_rank = group.rank();
  ModelShards shards = fresh_adapters(config, model_source_description(path, preset, seed), lora, path, seed,
                                      shard_size, shard_rank, shard_multiple);
  std::optional<SafetensorsCheckpoint> checkpoint;
  NewParams fresh;
  if (!path.empty()) {
    checkpoint.emplace(open_model_checkpoint(path, config));
    fresh = new_params(config, *checkpoint, seed);
  }
  const auto values_of = [&](const UnitLayout& part) {  // fp32 on the host
    return checkpoint ? load_unit_shard(part, shard_rank, *checkpoint, fresh) : init_unit_shard(part, shard_rank, seed);
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

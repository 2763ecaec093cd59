// This rank's fp32 master shards of every unit, from a Hugging Face directory (only the byte
// ranges this rank owns are read, through mmap) or from a preset's parameter-seeded init (the
// values do not depend on the number of ranks).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "fsdp/quantized_base.h"
#include "fsdp/unit_layout.h"
#include "hf/model_config.h"
#include "model/lora.h"

namespace st {

// The frozen base of an adapter run: the model's units and this rank's shard of each, on the
// device; no master, gradient or optimizer state. LoRA: the shards in the compute dtype, laid
// out as `units`. QLoRA: `quantized` per unit, each shard its bytes and `units` the bound
// layouts the dequantized flats follow (quantized_base.h).
struct FrozenBase {
  std::vector<UnitLayout> units;
  std::vector<at::Tensor> shards;
  std::vector<QuantizedUnit> quantized;
  bool present() const { return !units.empty(); }
  bool is_quantized() const { return !quantized.empty(); }
};

struct ModelShards {
  ModelConfig config;
  std::vector<UnitLayout> units;   // laid out for the shard group: what is trained
  std::vector<at::Tensor> masters;  // fp32 on the host, one per unit
  std::string description;         // for logs: the directory or "preset <name> (seed s)"
  FrozenBase base = {};            // adapter runs: the model the trained units adapt
  std::string path;                // where the weights were read (model.path), "" for a preset
  uint64_t seed = 0;               // the preset's seed, and a new score head's
};

// Whether an adapter run's frozen embedding table stays in host memory (lora.host_embedding):
// on a GPU, when it is never gathered (a shard group of one) and the head has its own weight.
// Its forward then moves only the batch's rows (embedding_rows).
bool frozen_embedding_on_host(const ModelConfig& config, bool host_embedding, bool on_gpu, int shard_size);

// The shape alone (config.json, or the preset's), without reading any weights.
ModelConfig model_config_of(const std::string& path, const std::string& preset);

// For logs and checkpoints: the directory, or "preset <name> (seed s)".
std::string model_source_description(const std::string& path, const std::string& preset, uint64_t seed);

// What identifies the weights a run starts from, for data derived from them (precomputed
// reference log-probs): a preset's name and seed, or config.json's CRC-32 and each safetensors
// file's size and first/last-MiB CRC-32 (cheap on multi-GB files; a fine-tune changes them).
std::string model_fingerprint(const std::string& path, const std::string& preset, uint64_t seed);

// `path` non-empty: config.json + safetensors there; else the preset. Throws ModelError (also for
// a bitsandbytes 4-bit checkpoint, which only qlora_model_shards reads). `shard_multiple`: of
// the trained units' shards (unit_layout.h), here and below.
ModelShards load_model_shards(const std::string& path, const std::string& preset, uint64_t seed,
                              int shard_size, int shard_rank, int64_t shard_multiple = 1);
// The same as `model` (the checkpoint's config, or a reward model made of it: ModelHead::score):
// a score head the checkpoint lacks (a causal LM trained as a reward model) is new, seeded per
// parameter by `seed` with the config's initializer_range, as transformers initialises it.
ModelShards load_model_shards(const ModelConfig& model, const std::string& path, const std::string& preset,
                              uint64_t seed, int shard_size, int shard_rank, int64_t shard_multiple = 1);
// An adapter run from `base` (load_model_shards): the adapters' units as the trained masters (A
// seeded per parameter by lora.seed, B zero: the first forward is the base's), the base moved to
// a FrozenBase in `compute_dtype` on `device`, one unit at a time.
ModelShards adapter_model_shards(ModelShards base, const LoraOptions& lora, at::ScalarType compute_dtype,
                                 const at::Device& device, int shard_rank, int64_t shard_multiple = 1);

// A QLoRA run (train.method = qlora): the adapters as adapter_model_shards makes them, and the
// base read one unit at a time (`path`, else the preset) and held as NF4 on `device`, each rank
// quantizing only its own blocks; `group` is the shard group (double quantization's statistics).
// A bitsandbytes 4-bit checkpoint is read as stored (nf4_checkpoint.h). `config` as
// load_model_shards' `model`.
ModelShards qlora_model_shards(const std::string& path, const std::string& preset, uint64_t seed,
                               const LoraOptions& lora, at::ScalarType compute_dtype, const at::Device& device,
                               Communicator& group, int64_t shard_multiple = 1);
ModelShards qlora_model_shards(const ModelConfig& config, const std::string& path, const std::string& preset,
                               uint64_t seed, const LoraOptions& lora, at::ScalarType compute_dtype,
                               const at::Device& device, Communicator& group, int64_t shard_multiple = 1);

// A preset-like seeded init for an explicit config (tests, benchmarks).
ModelShards init_model_shards(const ModelConfig& config, uint64_t seed, int shard_size, int shard_rank,
                              int64_t shard_multiple = 1);

}  // namespace st

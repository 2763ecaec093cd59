// FSDP unit geometry: the model's parameters grouped into units (embedding, each decoder layer,
// head = final norm + lm_head, then each sparse layer's experts: model/llama_units.h UnitRole), each unit's parameters concatenated in HF order into one flat
// vector padded to a multiple of the shard-group size (times `shard_multiple`: the optimizer's
// block, so every shard is whole blocks; optim_options.h shard_multiple_of). Rank r of the group owns elements
// [r * shard_numel, (r + 1) * shard_numel) of every unit. This is the one place that computes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hf/model_config.h"
#include "hf/param_table.h"
#include "model/lora.h"
#include "optim/decayed_ranges.h"

namespace st {

struct ParamSlot {
  ParamSpec spec;
  int64_t offset = 0;  // first element in the unit's flat vector
};

struct UnitLayout {
  std::string name;               // "embedding", "layer.<i>", "head", "layer.<i>.experts"
  std::vector<ParamSlot> params;  // HF order, packed without gaps
  int64_t numel = 0;              // sum of the parameters' sizes
  int64_t padded_numel = 0;       // numel rounded up to a multiple of group size x shard multiple
  int64_t shard_numel = 0;        // padded_numel / group size

  int64_t shard_offset(int rank) const { return rank * shard_numel; }
};

// Units in execution order, then the experts units. With tied embeddings the head unit holds only
// the final norm; the lm_head is the embedding unit's weight.
std::vector<UnitLayout> build_unit_layouts(const ModelConfig& config, int group_size, int64_t shard_multiple = 1);

// An adapter run's units, in the same order and under the same names: each layer's LoRA pairs
// (lora_layer_params); the embedding unit holds none (numel 0, padded to one element (x
// shard_multiple) per rank so every unit has a shard), the head unit a reward model's score
// trained in full (saved_module_params) or none; an experts unit none (the experts' pairs are
// their layer's).
std::vector<UnitLayout> build_adapter_unit_layouts(const ModelConfig& config, const std::vector<LoraTarget>& targets,
                                                   int64_t r, int group_size, int64_t shard_multiple = 1);

// The shard length of `numel` elements over `group_size` shards of whole `shard_multiple`s.
int64_t shard_numel_of(int64_t numel, int64_t group_size, int64_t shard_multiple = 1);

// The units whose gathered parameters unit `unit` runs with: itself, for the head with tied
// embeddings also the embedding unit (0), for a sparse layer also its experts unit.
std::vector<size_t> units_run_with(const ModelConfig& config, size_t unit);
std::string experts_unit_name(int64_t layer);  // "layer.<layer>.experts"

// Throws ConfigError naming dist.expert_parallel unless `expert_parallel` (> 1) can split the
// experts of `units` (laid out for the shard group; a QLoRA base's as it holds them, whose
// experts stay unquantized): the model has experts, P divides them, and every experts unit fills
// its shards exactly (no padding), so the shards of a run of experts hold that run alone.
void check_expert_split_geometry(const ModelConfig& config, const std::vector<UnitLayout>& units, int64_t expert_parallel);

// The part of parameter `slot` that lies in [first, first + count) of the flat vector, as
// (element offset within the parameter, element offset within the range, length); length 0
// when they do not overlap.
struct SlotOverlap {
  int64_t param_offset = 0;
  int64_t range_offset = 0;
  int64_t length = 0;
};
SlotOverlap overlap(const ParamSlot& slot, int64_t first, int64_t count);

// Per unit: the parts of rank `shard_rank`'s shard that hold matrices, which get weight decay
// (norm weights, biases and padding do not; HF Trainer's default).
DecayedRanges weight_decay_ranges(const std::vector<UnitLayout>& units, int shard_rank);

}  // namespace st

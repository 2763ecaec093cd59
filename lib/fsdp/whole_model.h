// The model as whole tensors on every rank, for decoding (an online objective's rollouts, eval's
// generate tasks): every unit's shards all-gathered once over the shard group, in the compute
// dtype on the model's device, by Hugging Face name. An adapter run's base comes with its
// adapters folded in (W + scale B A: what its forward computes, dropout aside); a QLoRA base
// dequantized first (the NF4 values its forward computes with).
#pragma once

#include <string>

#include "distributed/communicator.h"
#include "fsdp/fsdp_model.h"
#include "model/llama_units.h"

namespace st {

// Throws ConfigError naming the setting for what cannot be gathered whole yet: experts split over
// ranks. `purpose` starts the message ("grpo's rollouts").
void check_whole_model_gatherable(FsdpModel& model, const std::string& purpose);

// Collective over the world: `host` is the world on the CPU backend (an adapter run's adapters
// are assembled over it). Checks check_whole_model_gatherable first.
TensorMap gather_whole_model(FsdpModel& model, Communicator& host);

}  // namespace st

// The model as whole tensors on every rank, for decoding (an online objective's rollouts, eval's
// generate tasks): every unit's shards all-gathered once over the shard group, in the compute
// dtype on the model's device. An adapter run's base comes with its adapters folded in
// (W + scale B A: what its forward computes, dropout aside); a QLoRA base dequantized first (the
// NF4 values its forward computes with). Under expert parallelism each rank gathers only its own
// run of every sparse layer's experts (over its expert shard group) and its decoding reaches the
// others through the expert exchange, as training does.
#pragma once

#include "distributed/communicator.h"
#include "fsdp/fsdp_model.h"
#include "model/llama_blocks.h"

namespace st {

// Collective over the world: `host` is the world on the CPU backend (an adapter run's adapters
// are assembled over it). Decoding with the weights is collective over the expert group where
// they hold an expert exchange (generation.h).
LlamaWeights gather_whole_model(FsdpModel& model, Communicator& host);

}  // namespace st

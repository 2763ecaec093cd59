// What the engine reports each step: collective payload bytes (the buffer each collective
// moves as seen by this rank: a gather's output, a reduce-scatter's input, an all-reduce's
// buffer; docs/fsdp.md relates them to wire traffic), and the bytes of its own allocations by
// category on the compute device and on the host.
#pragma once

#include <cstdint>

namespace st {

struct CommBytes {
  int64_t all_gather = 0;
  int64_t reduce_scatter = 0;
  int64_t all_reduce = 0;

  int64_t total() const { return all_gather + reduce_scatter + all_reduce; }
};

struct EngineMemory {
  int64_t params = 0;          // fp32 master shards + compute-dtype shards (when a separate copy)
  int64_t grads = 0;           // fp32 gradient-shard accumulators
  int64_t optimizer = 0;       // AdamW m and v
  int64_t gathered_peak = 0;   // most bytes of gathered units (and their gradients) alive at once
  int64_t offloaded = 0;       // of the above, bytes held in host memory because of offload

  int64_t states() const { return params + grads + optimizer; }
};

}  // namespace st

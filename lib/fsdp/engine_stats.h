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

  // By name, in order: one list for the metrics keys ("comm/<name>_bytes"), += and total().
  struct Field {
    const char* name;
    int64_t CommBytes::*bytes;
  };
  static constexpr Field kFields[] = {{"all_gather", &CommBytes::all_gather},
                                      {"reduce_scatter", &CommBytes::reduce_scatter},
                                      {"all_reduce", &CommBytes::all_reduce}};

  int64_t total() const {
    int64_t sum = 0;
    for (const Field& field : kFields) sum += this->*field.bytes;
    return sum;
  }
  CommBytes& operator+=(const CommBytes& o) {
    for (const Field& field : kFields) this->*field.bytes += o.*field.bytes;
    return *this;
  }
};

// Wall seconds of a step's phases. On a GPU they are exact only when the engine syncs the
// device at each phase's end (EngineOptions::sync_phases); on the CPU they always are.
struct StepPhases {
  double data = 0.0;       // waiting for the loader's batch (timed by the trainer)
  // An online objective's generation (rollout_phase.h, timed by it): the completions sampled or
  // replayed, their rewards, and the generating policy's log-probs where a step needs them.
  double rollout = 0.0, reward = 0.0, old_logps = 0.0;
  double reference = 0.0;  // the online DPO reference's forward (timed by the trainer)
  double forward = 0.0;    // the micro-batches' forward and loss, gathers included
  double backward = 0.0;   // their backward (recomputation, gathers, reduce-scatters queued)
  double grad_sync = 0.0;  // the reduce-scatters still in flight after the last backward
  double optimizer = 0.0;  // overflow check, clipping, AdamW, compute-copy refresh

  // The phases by name, in order: one list for the metrics keys ("time/<name>_s") and readers.
  struct Field {
    const char* name;
    double StepPhases::*seconds;
  };
  static constexpr Field kFields[] = {{"data", &StepPhases::data},         {"rollout", &StepPhases::rollout},
                                      {"reward", &StepPhases::reward},     {"old_logps", &StepPhases::old_logps},
                                      {"reference", &StepPhases::reference},
                                      {"forward", &StepPhases::forward},   {"backward", &StepPhases::backward},
                                      {"grad_sync", &StepPhases::grad_sync}, {"optimizer", &StepPhases::optimizer}};

  StepPhases& operator+=(const StepPhases& o) {
    for (const Field& field : kFields) this->*field.seconds += o.*field.seconds;
    return *this;
  }
};

struct EngineMemory {
  int64_t params = 0;          // fp32 master shards + compute-dtype shards (when a separate copy)
  int64_t grads = 0;           // fp32 gradient-shard accumulators
  int64_t optimizer = 0;       // AdamW m and v
  int64_t gathered_peak = 0;   // most bytes of gathered units (and their gradients) alive at once
  int64_t offloaded = 0;       // of the above, bytes held in host memory (offload; a frozen embedding)
  // Most bytes of unit inputs one differentiated forward saved for its backward (the activations
  // that live from forward to backward under full recompute; context parallelism divides them).
  int64_t saved_inputs_peak = 0;

  int64_t states() const { return params + grads + optimizer; }
};

}  // namespace st

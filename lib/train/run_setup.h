// Everything a training run is made of, built once before its first step, in the order the
// run needs it: run directory and resume decision, data and plan, sharding groups, the engine
// (from the base model or the checkpoint), the online reference, the recompute plan and the
// checkpoint writer. The Trainer then only runs steps.
#pragma once

#include <c10/core/Device.h>

#include <memory>
#include <optional>
#include <string>

#include "ckpt/checkpoint_writer.h"
#include "config/config_schema.h"
#include "distributed/mpi_communicator.h"
#include "distributed/parallel_layout.h"
#include "distributed/world.h"
#include "fsdp/fsdp_engine.h"
#include "fsdp/sharding.h"
#include "train/reference.h"
#include "train/train_config.h"
#include "train/train_plan.h"

namespace st {

// Switches of the command that runs the trainer, not keys of the user configuration.
struct RunOptions {
  bool sync_phases = false;  // sync the device at phase ends: exact step-time breakdown on a GPU (bench)
  bool save_at_end = true;   // false: no final checkpoint (bench runs keep no state)
  std::string config_text;   // the run's config.resolved.ini, for TensorBoard; empty: the config without origins
  ConfigOrigins origins;     // where each key's value came from, for the lines that name a key's origin
};

struct RunSetup {
  // Declared before what uses them: destroyed last.
  std::unique_ptr<MpiCommunicator> host;   // small host-side agreements and metric reductions
  std::unique_ptr<ShardingGroups> groups;  // the engine and the reference hold references to it
  c10::Device device = c10::Device(c10::kCPU);
  ParallelLayout parallel;                 // data-parallel x context-parallel (dist.context_parallel)
  TrainData data;
  TrainPlan plan;
  std::unique_ptr<FsdpEngine> engine;
  std::unique_ptr<ReferenceModel> reference;  // dpo.reference resolved to online, else null
  std::unique_ptr<CheckpointWriter> checkpoints;
  TrainProgress progress;                     // where training stands (restored on resume)
  std::optional<std::string> resume_from;     // the checkpoint this run continues
  double peak_tflops = 0.0;                   // for MFU; 0 = unknown
  int64_t micro_batch_tokens = 0;             // data.micro_batch_tokens resolved (auto sized to the memory)
};

// Collective over the world: decides between a fresh start and a resume (train.resume), opens
// the data, builds the sharding groups, loads this rank's model shards from the base model or
// the checkpoint (resharded when the rank count changed) and the reference's. Throws
// ConfigError / DataError / ModelError / CheckpointError.
RunSetup setup_run(const TrainConfig& config, World& world, const RunOptions& options = {});

}  // namespace st

// The trainer's side of checkpoints: where they go, which one a run resumes from (and whether
// starting fresh would overwrite an earlier run), what a save takes from the engine, and
// putting a loaded checkpoint back into it. Formats and I/O live in lib/ckpt.
#pragma once

#include <optional>
#include <string>

#include "ckpt/checkpoint_reader.h"
#include "ckpt/checkpoint_writer.h"
#include "distributed/communicator.h"
#include "fsdp/fsdp_engine.h"
#include "fsdp/sharding.h"
#include "train/train_config.h"

namespace st {

std::string checkpoint_directory(const TrainConfig& config);  // ckpt.dir or <output_dir>/checkpoints

// Collective over `world`. Rank 0 removes saves a crash interrupted and decides: the checkpoint
// train.resume selects (nullopt = start fresh). Starting fresh where an earlier run left
// metrics or checkpoints needs train.overwrite (which removes those checkpoints) or
// train.resume = auto. Throws ConfigError / CheckpointError on every rank.
std::optional<std::string> prepare_run_directory(const TrainConfig& config, Communicator& world);
// Collective, when training starts (not during set-up: a stop there writes nothing): resuming an
// explicitly named older checkpoint abandons the run's newer ones; they and an export made from
// them move to <checkpoint dir>/abandoned-<step>-<time>/ (ckpt/checkpoint_directory.h), said so.
void abandon_later_timeline(const TrainConfig& config, const std::string& resume_from, Communicator& world);

ShardPlace shard_place(ShardingGroups& groups);
// train.method = lora: the adapters' shape and the base's identity (model_fingerprint) that a
// resume must match, and what may change on resume (dropout, where the base was read from:
// export --merge reads it there); null for full.
nlohmann::json adapter_identity(const TrainConfig& config);
CheckpointIdentity checkpoint_identity(const TrainConfig& config, const ModelConfig& model,
                                       const std::vector<UnitLayout>& units, const std::string& model_source);
// Views of the engine's masters and AdamW moments (no copies).
ShardState engine_state(FsdpEngine& engine);
// Collective over `world`: reads checkpoint `directory` into the engine's masters and AdamW
// moments (in place), restores the AdamW step count and the loss scaler. Moments of the other
// optim.name are converted (adamw -> adamw8bit coded blockwise, the other way decoded).
LoadedCheckpoint resume_engine(FsdpEngine& engine, const std::string& directory, int shard, Communicator& world);

// metrics.jsonl of a resumed run: drops the records after `step` (written after the checkpoint
// by the run that stopped), so the resumed run's records follow on without duplicates.
void truncate_metrics_after(const std::string& path, int64_t step);

}  // namespace st

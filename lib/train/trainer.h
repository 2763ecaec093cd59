// `shardtune train`'s loop: the sharded policy (FsdpEngine), the reference (reference.h), the
// data (train and validation loaders), the objective per micro-batch (batch_loss.h), the
// learning-rate schedule, evaluation, and the metrics of every logging window in
// <output_dir>/metrics.jsonl. Every rank runs it; records are reduced over the ranks.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>

#include "config/train_config.h"
#include "dist/world.h"
#include "train/train_plan.h"

namespace st {

struct TrainObserver {
  std::function<void(int64_t done, int64_t total, double elapsed_s)> step_done;
  std::function<void(const nlohmann::ordered_json& record)> record;  // each train or eval record
};

struct TrainResult {
  int64_t first_step = 0;  // the step a resumed run started from (0 when fresh)
  int64_t steps = 0;       // optimizer steps completed, counting those before a resume
  bool preempted = false;  // stopped early on SIGUSR1/SIGTERM after saving a checkpoint
  double seconds = 0.0;
  nlohmann::ordered_json last_train;  // the last train record (null when none was written)
  nlohmann::ordered_json last_eval;   // the last evaluation (null without validation data)
};

class Trainer {
 public:
  // Collective over the world: decides between a fresh start and a resume (train.resume), opens
  // the data, builds the sharding groups, loads this rank's model shards from the base model or
  // the checkpoint (resharded when the rank count changed) and the reference's. Throws
  // ConfigError / DataError / ModelError / CheckpointError.
  Trainer(const TrainConfig& config, World& world);
  ~Trainer();

  const TrainPlan& plan() const;
  // Collective over the world. Writes metrics.jsonl on rank 0 and checkpoints (ckpt.every, at
  // the end, and on SIGUSR1/SIGTERM, which then ends the run early: result.preempted).
  TrainResult run(const TrainObserver& observer = {});

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace st

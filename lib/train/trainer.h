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
  int64_t steps = 0;
  double seconds = 0.0;
  nlohmann::ordered_json last_train;  // the last train record (null when none was written)
  nlohmann::ordered_json last_eval;   // the last evaluation (null without validation data)
};

class Trainer {
 public:
  // Collective over the world: opens the data, builds the sharding groups, loads this rank's
  // model shards (and the reference's). Throws ConfigError / DataError / ModelError.
  Trainer(const TrainConfig& config, World& world);
  ~Trainer();

  const TrainPlan& plan() const;
  // Collective over the world. Writes metrics.jsonl on rank 0.
  TrainResult run(const TrainObserver& observer = {});

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace st

// The [eval] tasks of a training run: read and checked when the run is set up (a bad task
// file, a missing tokenizer or generation in an adapter run stops it before the first step),
// then scored at every evaluation with the current weights - each rank its block of every
// task's documents - into the eval record as eval/<task>/<metric> and eval/<task>/<metric>_stderr.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "eval/eval_runner.h"
#include "eval/eval_task.h"
#include "fsdp/fsdp_model.h"
#include "tokenizer/chat_template.h"
#include "train/train_config.h"

namespace st {

class TaskEvaluation {
 public:
  // Throws DataError (task files) or ConfigError (no tokenizer; generate_until in a LoRA run).
  // Reads the model's config.json only when there are tasks.
  explicit TaskEvaluation(const TrainConfig& config);

  const std::vector<EvalTask>& tasks() const { return tasks_; }
  // Collective over `host` (the world on the CPU backend): every task on this rank's documents,
  // gathered and aggregated; the metrics go into `record`, a line per task to the console.
  void run(FsdpModel& model, Communicator& host, int64_t step, nlohmann::ordered_json& record);

 private:
  std::vector<EvalTask> tasks_;
  std::vector<std::vector<std::string>> contexts_;  // per task, per document
  std::optional<Tokenizer> tokenizer_;
  EvalSettings settings_;
  int64_t max_batch_tokens_ = 8192;
};

}  // namespace st

// `shardtune train`'s loop over a RunSetup (run_setup.h): the objective per micro-batch
// (batch_loss.h), the learning-rate schedule, evaluation, checkpoints, and the metrics of every
// logging window in <output_dir>/metrics.jsonl. Every rank runs it; records are reduced over
// the ranks. A step runs in named phases: train_step, log_window, evaluate, maybe_checkpoint.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "data/pair_loader.h"
#include "distributed/world.h"
#include "train/objective.h"
#include "train/rollout_phase.h"
#include "train/run_setup.h"
#include "train/stop_request.h"
#include "train/task_evaluation.h"
#include "train/train_config.h"
#include "train/train_metrics.h"

namespace st {

struct TrainObserver {
  std::function<void(int64_t done, int64_t total, double elapsed_s)> step_done;
  std::function<void(const TrainRecord& record)> train_record;        // each logging window
  std::function<void(const nlohmann::ordered_json& record)> record;  // each train or eval record
};

struct TrainResult {
  int64_t first_step = 0;  // the step a resumed run started from (0 when fresh)
  int64_t steps = 0;       // optimizer steps completed, counting those before a resume
  // A stop request ended the run early: after saving a checkpoint, or after the last step's
  // checkpoint with the final eval or the export left for `--resume auto`.
  StopKind stopped = StopKind::none;
  double seconds = 0.0;
  std::optional<TrainRecord> last_train;  // none when no train record was written
  std::optional<EvalRecord> last_eval;    // none without validation data
};

class Trainer {
 public:
  // Collective over the world: setup_run(config, world, options).
  Trainer(const TrainConfig& config, World& world, const RunOptions& options = {});
  ~Trainer();

  const TrainPlan& plan() const { return run_.plan; }
  // Collective over the world. Writes metrics.jsonl on rank 0 and checkpoints (ckpt.every, at
  // the end, and on SIGUSR1/SIGTERM, which then ends the run early: result.stopped). A complete
  // run resumed again writes its export if an interrupted job left none.
  TrainResult run(const TrainObserver& observer = {});

 private:
  // Collective: one optimizer step at learning rate `lr` over the step's micro-batches, added
  // to `window`.
  StepOutcome train_step(const StepBatch& batch, double lr, WindowStats& window);
  // Collective: the window's record over all ranks (the one host read of its sums); resets it.
  TrainRecord log_window(WindowStats& window, const StepOutcome& outcome, const StepBatch& batch, double lr,
                         int64_t steps, int64_t skipped);
  // Collective: an evaluation over the validation data and the [eval] tasks after `step` steps.
  EvalRecord evaluate(int64_t step);
  EvalRecord evaluate_validation(int64_t step);
  bool evaluates() const { return run_.data.val || !tasks_.tasks().empty(); }
  // The share of each data.train dataset in the samples trained so far (empty unless a mixture).
  std::vector<double> mixture_shares() const;
  // Collective: saves when ckpt.every, the end or a stop request asks for it; returns the stop
  // request the ranks agreed on.
  StopKind maybe_checkpoint(int64_t steps, WindowStats& window);
  // Collective, after the last step's checkpoint: the final eval and the export, each skipped
  // once a stop was requested (and said so); returns the stop request.
  StopKind finish_run(TrainResult& result, const std::function<void(const nlohmann::ordered_json&)>& emit);
  bool export_missing();  // collective: rank 0 looks (shared storage)
  // A step's device work outlasts its host calls (no syncs in a step): the window's time ends
  // with the wait for that work, taken before a log, an eval or a checkpoint waits on it.
  void drain_device_into(WindowStats& window);
  void export_model();

  // `step_pairs_per_micro_batch`: see Objective::micro_batch_loss (0 in evaluations).
  MicroBatchResult run_micro_batch(const MicroBatch& micro, double step_pairs_per_micro_batch = 0.0);
  // A model with experts in training: the router's load-balancing loss of the policy's forward.
  void add_router_loss(MicroBatchResult& result, const at::Tensor& policy);
  const MicroBatch& micro_or_padding(const std::vector<MicroBatch>& mine, int64_t index);
  LoaderOptions loader_options(bool train) const;

  TrainConfig config_;
  const Objective& objective_;  // train.stage's
  RunOptions options_;
  World& world_;
  TaskEvaluation tasks_;  // read before the model loads: a bad task file stops the run first
  RunSetup run_;
  double reference_seconds_ = 0.0;        // the online reference's forwards since the step began
  std::vector<uint64_t> mixture_seen_;    // samples of each data.train dataset trained by this process
  std::unique_ptr<MicroBatch> padding_;   // a zero-weight micro-batch for ranks with fewer
  double router_coefficient_ = 0.0;       // moe.aux_loss_coef as it applies (moe_options.h)
  std::unique_ptr<RolloutPhase> rollouts_;  // an online objective's (else null): its steps' batches
};

}  // namespace st

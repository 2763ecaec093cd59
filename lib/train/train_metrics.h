// The metrics of a logging window or an evaluation: gathered over the ranks once per record
// (one small collective), turned into a metrics.jsonl record and a console line. Names follow
// TRL / LlamaFactory (loss, rewards/accuracies, ...); every field is in docs/metrics.md.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "distributed/communicator.h"
#include "fsdp/engine_stats.h"
#include "train/batch_loss.h"
#include "train/objective.h"

namespace st {

// What this rank saw in one logging window.
struct WindowStats {
  LossSums sums;           // complete after settle()
  at::Tensor output_sums;  // [kOutputSums] on the device until settle() reads them into sums
  at::Tensor expert_picks;  // [L, E] on the device: MicroBatchResult's, summed (the same on every rank)
  double flops = 0.0;    // model FLOPs (flops.h)
  double seconds = 0.0;  // wall time of the window's steps
  int64_t steps = 0;
  CommBytes comm;        // collective payload bytes, summed over the steps
  StepPhases phases;     // summed over the steps
  std::vector<at::Tensor> micro_metrics;  // MicroBatchResult's, one per micro-batch that has them

  void add(const MicroBatchResult& micro);
  void settle();  // one host read (util/host_sync.h)
};

struct RecordContext {
  const Objective* objective = nullptr;  // train.stage's (objective_for); required
  const ObjectiveSections* sections = nullptr;  // the objectives' settings; required
  int64_t step = 0;           // optimizer steps done
  double epoch = 0.0;         // fractional epochs done
  double lr = 0.0, grad_norm = 0.0;
  int64_t skipped_steps = 0;  // fp16 overflow steps so far
  double peak_tflops = 0.0;   // per device; 0 = no MFU
  int64_t peak_memory_bytes = 0;  // this rank's peak so far
  std::string memory_kind;        // "gpu" or "host_rss"
  int64_t saved_activation_bytes = 0;  // the engine's unit inputs kept from forward to backward, at most
  bool exact_phases = false;      // the phase times mean something (time/* keys are written)
};

// A logging window over all ranks: the figures a caller reads by name (the bench), and the
// metrics.jsonl record that holds them and every other key.
// What a run reports at its end, typed: the loss and, for DPO, the reward accuracy.
struct LossSummary {
  double loss = 0.0;                      // per pair (DPO) or per completion token (SFT)
  std::optional<double> reward_accuracy;  // DPO: the share of pairs whose chosen reward is higher
};
LossSummary loss_summary(const Objective& objective, const LossSums& sums);

struct TrainRecord {
  int64_t step = 0;
  LossSummary losses;
  double step_time_s = 0.0;      // the slowest rank's, per step
  double tokens_per_s = 0.0;     // logical tokens (of the unpacked pairs) over all ranks
  double tokens = 0.0;           // the window's logical tokens over all ranks (its log_every steps)
  double padding_fraction = 0.0;  // of the row slots computed
  double mfu = 0.0;              // 0 without a peak (RecordContext::peak_tflops)
  double peak_memory_gib = 0.0;  // the rank that peaked highest
  double saved_activations_gib = 0.0;  // the engine's saved unit inputs, the rank with the most
  std::optional<StepPhases> phases;  // per step, the slowest rank's; only when exact
  nlohmann::ordered_json json;
};

// Loss and, for DPO, rewards/* and logps/* from sums; keys get `prefix` ("" or "eval/").
nlohmann::ordered_json loss_metrics(const Objective& objective, const LossSums& sums, const std::string& prefix);

// Collective over `world` (every rank calls it with its own window).
TrainRecord reduce_train_record(Communicator& world, const WindowStats& window, const RecordContext& context);
struct EvalRecord {
  int64_t step = 0;
  double samples = 0.0;  // pairs (DPO) or sequences (SFT) evaluated
  LossSummary losses;
  nlohmann::ordered_json json;
};
EvalRecord reduce_eval_record(Communicator& world, const Objective& objective, const LossSums& sums, int64_t step,
                                  double seconds);

// "step 10/60  loss 0.6812  acc 0.625  margin 0.031  lr 9.8e-04 ..." for the console.
std::string console_line(const nlohmann::ordered_json& record, int64_t total_steps);

}  // namespace st

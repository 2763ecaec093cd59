#include "train/trainer.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <utility>

#include "ckpt/hf_export.h"
#include "ckpt/peft_export.h"
#include "distributed/value_gather.h"
#include "optim/lr_schedule.h"
#include "train/flops.h"
#include "train/metrics_file.h"
#include "train/tensorboard_writer.h"
#include "train/train_arguments.h"
#include "train/train_checkpoints.h"
#include "util/device.h"
#include "util/fault_injection.h"
#include "util/host_memory.h"
#include "util/host_sync.h"
#include "util/log.h"
#include "util/rng_state.h"
#include "util/stop_signal.h"
#include "util/timer.h"
#include "util/torch_compat.h"

namespace st {
namespace {

// A step's shape agreed over the ranks: the most micro-batches any rank has (the others run
// zero-weight padding batches), the micro-batches of all ranks, and the global pair and
// completion-token counts the summed losses are divided by.
struct StepShape {
  int64_t micro_batches = 0;
  double all_micro_batches = 0.0, pairs = 0.0, target_tokens = 0.0;

  double pairs_per_micro_batch() const { return pairs / std::max(all_micro_batches, 1.0); }
};

// `counts`: this rank's micro-batches are counted (a context group's ranks hold the same ones:
// only its first counts them, parallel_layout.h).
StepShape agree_step_shape(Communicator& world, const std::vector<MicroBatch>& mine, bool counts) {
  const double share = counts ? 1.0 : 0.0;
  double pairs = 0.0, tokens = 0.0;
  for (const MicroBatch& micro : mine) {
    pairs += static_cast<double>(micro.pairs);
    tokens += static_cast<double>(micro.target_tokens);
  }
  const auto size = static_cast<double>(mine.size());
  const std::vector<double> all = all_gather_values(world, {size, share * size, share * pairs, share * tokens});
  StepShape shape;
  for (size_t rank = 0; rank < all.size() / 4; ++rank) {
    shape.micro_batches = std::max(shape.micro_batches, static_cast<int64_t>(all[4 * rank]));
    shape.all_micro_batches += all[4 * rank + 1];
    shape.pairs += all[4 * rank + 2];
    shape.target_tokens += all[4 * rank + 3];
  }
  return shape;
}

}  // namespace

Trainer::Trainer(const TrainConfig& config, World& world, const RunOptions& options)
    : config_(config),
      objective_(objective_for(config.train.stage)),
      options_(options),
      world_(world),
      tasks_(config),
      run_(setup_run(config, world, options)),
      router_coefficient_(router_loss_coefficient(config.moe, objective_.adds_router_loss_by_default(), run_.engine->model().config())) {
  if (objective_.online()) rollouts_ = std::make_unique<RolloutPhase>(config_, objective_, run_);
}

Trainer::~Trainer() = default;

LoaderOptions Trainer::loader_options(bool train) const {
  LoaderOptions options;
  options.global_batch = static_cast<uint64_t>(train ? run_.plan.global_batch : config_.train.micro_batch * run_.parallel.data_size);
  options.seed = config_.train.seed;
  options.shuffle = train && config_.data.shuffle;
  options.collate = collate_options(config_, run_.data.train->pad_id());
  options.collate.max_tokens = run_.micro_batch_tokens;
  options.prefetch_steps = static_cast<size_t>(config_.data.prefetch_steps);
  options.subset = train ? run_.data.train_subset : run_.data.val_subset;
  if (train) {
    options.mixture_sizes = run_.data.train_sizes;
    options.mixture_weights = run_.data.train_weights;
  }
  return options;
}

// One batch of device inputs for the reference and the policy (host targets: no sync).
MicroBatchResult Trainer::run_micro_batch(const MicroBatch& micro, double step_pairs_per_micro_batch) {
  // Training forwards of a model with experts tally their routing: the router's loss (when its
  // coefficient is not 0) and the expert load (always). Evaluations do not.
  const bool routed = run_.engine->model().config().experts.num_experts > 0 && at::GradMode::is_enabled();
  TokenBatch batch = run_.engine->model().make_batch(micro.input_ids, micro.targets, micro.layout,
                                                     routed ? micro.token_weights : at::Tensor());
  batch.head_output = objective_.head_output();
  batch.logit_temperature = objective_.logit_temperature(config_);
  at::Tensor reference_logps;
  if (run_.plan.reference == ReferenceMode::precomputed) reference_logps = to_device_async(micro.ref_logps, run_.device);
  if (objective_.online()) {
    reference_logps = micro.ref_token_logps;  // the rollout phase's, once per generation
  } else if (run_.plan.reference == ReferenceMode::online) {
    const Timer timer;
    reference_logps = run_.reference->logps(batch);
    if (options_.sync_phases) compat::synchronize_compute(run_.device);
    reference_seconds_ += timer.seconds();
  }
  const at::Tensor policy = run_.engine->model().sequence_logps(batch);
  const at::Tensor mine = objective_.values_over_ranks(micro, policy, config_);
  MicroBatch with_ranks;  // the batch with every rank's values, where the loss takes them
  if (mine.defined()) {
    with_ranks = micro;
    const at::Tensor values = mine.to(at::kCPU, at::kDouble).contiguous();
    const std::vector<double> all = concatenated_values(*run_.host, {values.data_ptr<double>(),
                                                                     values.data_ptr<double>() + values.numel()});
    with_ranks.ranks_values = at::tensor(all, at::kDouble).to(at::kFloat);  // fp32 values, exact in fp64
  }
  MicroBatchResult result = objective_.micro_batch_loss(mine.defined() ? with_ranks : micro, policy, reference_logps,
                                                        config_, step_pairs_per_micro_batch);
  if (routed) add_router_loss(result, policy);
  return result;
}

void Trainer::add_router_loss(MicroBatchResult& result, const at::Tensor& policy) {
  const RouterLoss loss = run_.engine->model().router_loss(policy);
  // With the coefficient 0 the loss is only logged: nothing backpropagates through it.
  if (router_coefficient_ > 0.0) result.router_loss = loss.loss * router_coefficient_;
  if (result.counts.micro_batches == 0.0) return;  // padding: in the gradient (zero), not in the metrics
  const at::Tensor value = loss.loss.detach().to(at::kDouble);
  result.output_sums[static_cast<int64_t>(output_slot(&LossSums::router_loss))] = value;
  result.output_sums[static_cast<int64_t>(output_slot(&LossSums::weighted_router_loss))] = value * router_coefficient_;
  result.counts.router_forwards = 1.0;
  result.expert_picks = loss.picks;
}

const MicroBatch& Trainer::micro_or_padding(const std::vector<MicroBatch>& mine, int64_t index) {
  if (index < static_cast<int64_t>(mine.size())) return mine[static_cast<size_t>(index)];
  if (!padding_) {
    padding_ = std::make_unique<MicroBatch>(padding_micro_batch(objective_.example_kind(), run_.data.train->pad_id(),
                                                                run_.plan.reference == ReferenceMode::precomputed));
  }
  return *padding_;
}

StepOutcome Trainer::train_step(const StepBatch& batch, double lr, WindowStats& window) {
  const StepShape shape = agree_step_shape(*run_.host, batch.micro_batches, run_.parallel.counts_examples());
  LossSums counted;
  counted.pairs = shape.pairs;
  counted.target_tokens = shape.target_tokens;
  const double denominator = objective_.loss_denominator(counted);
  // Normalised once: every summed loss over the step's global count (pairs, or tokens for SFT,
  // counted over the data-parallel ranks), which the engine only adds up. The exact mean,
  // however unevenly the step's samples are spread.
  const double weight = 1.0 / std::max(denominator, 1.0);
  StepOutcome outcome = run_.engine->step(
      shape.micro_batches,
      [&](FsdpModel&, int64_t index) {
        const MicroBatch& micro = micro_or_padding(batch.micro_batches, index);
        MicroBatchResult micro_result = run_micro_batch(micro, shape.pairs_per_micro_batch());
        if (run_.parallel.counts_examples()) window.add(micro_result);
        // A context group's ranks each compute their share of the micro-batch.
        window.flops += training_flops(run_.engine->model().config(), micro.segment_lengths,
                                       run_.plan.reference == ReferenceMode::online,
                                       trains_adapters(config_.train.method)) /
                        run_.parallel.context_size;
        // Each rank's router loss per micro-batch, averaged over the step's micro-batches and the
        // data-parallel ranks, as TRL's gradient accumulation and DDP average them.
        if (!micro_result.router_loss.defined()) return micro_result.summed_loss * weight;
        const double forwards = static_cast<double>(shape.micro_batches) * static_cast<double>(run_.parallel.data_size);
        return micro_result.summed_loss * weight + micro_result.router_loss / forwards;
      },
      lr);
  window.steps += 1;
  StepPhases phases = outcome.phases;  // the engine's forward includes the trainer's reference
  phases.reference = std::exchange(reference_seconds_, 0.0);
  phases.forward -= phases.reference;
  window.phases += phases;
  window.comm += outcome.comm;
  return outcome;
}

TrainRecord Trainer::log_window(WindowStats& window, const StepOutcome& outcome, const StepBatch& batch, double lr,
                                int64_t steps, int64_t skipped) {
  RecordContext context;
  context.objective = &objective_;
  context.sections = &config_;
  context.step = steps;
  context.epoch = static_cast<double>(batch.global.next.epoch) +
                  static_cast<double>(batch.global.next.consumed) / static_cast<double>(run_.plan.train_pairs);
  context.lr = lr;
  context.grad_norm = outcome.read_grad_norm();  // with the window's sums: the one read
  context.skipped_steps = skipped;
  context.peak_tflops = run_.peak_tflops;
  context.peak_memory_bytes = run_.device.is_cuda() ? compat::peak_gpu_memory_bytes(run_.device.index())
                                                    : peak_resident_bytes();
  context.memory_kind = run_.device.is_cuda() ? "gpu" : "host_rss";
  context.saved_activation_bytes = run_.engine->model().memory().saved_inputs_peak;
  context.exact_phases = !run_.device.is_cuda() || options_.sync_phases;
  window.settle();
  TrainRecord record = reduce_train_record(*run_.host, window, context);
  if (rollouts_) record.json.update(rollouts_->take_metrics());
  window = {};
  return record;
}

EvalRecord Trainer::evaluate(int64_t step) {
  const Timer timer;
  c10::NoGradGuard no_grad;
  EvalRecord record;
  record.step = step;
  record.json["step"] = step;
  if (run_.data.val) record = evaluate_validation(step);
  if (!tasks_.tasks().empty()) {
    tasks_.run(run_.engine->model(), *run_.host, step, record.json);
    record.json["eval/seconds"] = timer.seconds();
  }
  return record;
}

EvalRecord Trainer::evaluate_validation(int64_t step) {
  const Timer timer;
  // Several validation datasets: each evaluated alone, and all together.
  const auto& parts = run_.data.val_parts;
  const size_t part_count = parts.size() > 1 ? parts.size() : 0;
  WindowStats totals;  // its sums stay on the device until the one read at the end
  std::vector<WindowStats> part_totals(part_count);
  for (size_t k = 0; k < std::max<size_t>(part_count, 1); ++k) {
    LoaderOptions options = loader_options(false);
    if (part_count > 0) options.subset = parts[k];
    PairLoader loader(run_.data.val, options, run_.parallel.data_rank, run_.parallel.data_size);
    for (uint64_t batch = 0; batch < loader.steps_per_epoch(); ++batch) {
      const StepBatch step_batch = loader.next();
      const StepShape shape = agree_step_shape(*run_.host, step_batch.micro_batches, run_.parallel.counts_examples());
      for (int64_t index = 0; index < shape.micro_batches; ++index) {
        const MicroBatchResult result = run_micro_batch(micro_or_padding(step_batch.micro_batches, index));
        if (!run_.parallel.counts_examples()) continue;
        totals.add(result);
        if (part_count > 0) part_totals[k].add(result);
      }
    }
  }
  totals.settle();
  EvalRecord record = reduce_eval_record(*run_.host, objective_, totals.sums, step, timer.seconds());
  for (size_t k = 0; k < part_count; ++k) {
    part_totals[k].settle();
    const EvalRecord part = reduce_eval_record(*run_.host, objective_, part_totals[k].sums, step, 0.0);
    record.json["eval/" + run_.data.val_names[k] + "/loss"] = part.losses.loss;
    record.json["eval/" + run_.data.val_names[k] + "/samples"] = part.samples;
  }
  return record;
}

std::vector<double> Trainer::mixture_shares() const {
  const auto seen = static_cast<double>(std::accumulate(mixture_seen_.begin(), mixture_seen_.end(), uint64_t{0}));
  std::vector<double> shares;
  for (uint64_t count : mixture_seen_) shares.push_back(static_cast<double>(count) / std::max(seen, 1.0));
  return shares;
}

void Trainer::drain_device_into(WindowStats& window) {
  const Timer wait;
  compat::synchronize_compute(run_.device);
  window.seconds += wait.seconds();
}

StopKind Trainer::maybe_checkpoint(int64_t steps, WindowStats& window) {
  run_.checkpoints->poll();
  const StopKind stop = agreed_stop_kind(*run_.host);
  const bool stopping = stop != StopKind::none;
  const int64_t every = config_.ckpt.every;
  const bool at_end = steps == run_.plan.total_steps && options_.save_at_end;
  if ((every > 0 && steps % every == 0) || stopping || at_end) {
    drain_device_into(window);
    run_.progress.optimizer_steps = run_.engine->optimizer().steps_taken();
    run_.progress.scaler = run_.engine->scaler().state();
    run_.checkpoints->save(run_.progress, engine_state(*run_.engine), capture_rng_state(cuda_device_index(run_.device)));
  }
  return stop;
}

// <output_dir>/export from the in-memory masters (the same bytes the last checkpoint holds): the
// whole model, or a LoRA run's PEFT adapter directory (shardtune export --merge folds it in).
void Trainer::export_model() {
  const std::string output = config_.train.output_dir + "/export";
  FsdpModel& model = run_.engine->model();
  const ShardPlace place = shard_place(*run_.groups);
  if (trains_adapters(config_.train.method)) {
    const Timer timer;
    const PeftExportResult exported =
        export_peft_adapter(output, model.config(), model.units(), model.master_shards(), place.shard, place.writes, *run_.host,
                            adapter_identity(config_), export_scalar_type(config_.ckpt.export_dtype), true);
    log0("export: ", output, " (PEFT LoRA adapter, ", exported.tensors, " tensors, ",
         static_cast<double>(exported.bytes) / 1e6, " MB) in ", timer.seconds(), " s");
    return;
  }
  HfExportOptions options;
  options.dtype = export_scalar_type(config_.ckpt.export_dtype);
  options.max_shard_bytes = static_cast<uint64_t>(config_.ckpt.export_shard_gb * 1e9);
  options.base_model_dir = config_.model.path;
  options.replace = true;  // the run owns <output_dir>/export
  const HfExportResult exported =
      export_hf_model(output, model.config(), model.units(), model.master_shards(), place, *run_.host, options);
  log0("export: ", output, " (", enum_name(config_.ckpt.export_dtype), ", ", exported.files, " file(s), ",
       static_cast<double>(exported.bytes) / 1e9, " GB) in ", exported.seconds, " s");
}

TrainResult Trainer::run(const TrainObserver& observer) {
  const int64_t total = run_.plan.total_steps;
  const int64_t first = run_.progress.step;
  if (first > 0 && first >= total) {  // e.g. the last job of a chain: the run ended before it
    TrainResult done;
    done.first_step = done.steps = first;
    if (export_missing()) {
      log0("train: the run is complete (its checkpoint is at step ", first, " of ", total,
           ") but its export is missing (interrupted); exporting that checkpoint");
      fault_signal_at("export");
      export_model();
    } else {
      log0("train: the run is already complete (its checkpoint is at step ", first, " of ", total,
           "); nothing to do");
    }
    return done;
  }
  if (run_.resume_from) abandon_later_timeline(config_, *run_.resume_from, *run_.host);
  std::unique_ptr<MetricsFile> metrics;
  std::unique_ptr<TensorboardWriter> tensorboard;
  if (world_.rank() == 0) {
    std::filesystem::create_directories(config_.train.output_dir);
    const std::string path = config_.train.output_dir + "/metrics.jsonl";
    if (first > 0) truncate_metrics_after(path, first);
    metrics = std::make_unique<MetricsFile>(path, /*append=*/first > 0);
    if (config_.train.tensorboard) {
      tensorboard = std::make_unique<TensorboardWriter>(config_.train.output_dir + "/tensorboard", first);
      tensorboard->add_text("config", options_.config_text.empty() ? format_resolved_config(config_) : options_.config_text,
                            first);
    }
  }
  TrainResult result;
  result.first_step = first;
  result.steps = first;
  const auto emit = [&](const nlohmann::ordered_json& record) {
    if (metrics) metrics->write(record);
    if (tensorboard) tensorboard->add_record(record);
    if (observer.record) observer.record(record);
  };

  const Timer run_timer;
  // An online objective's steps come from its rollout phase; the others' from the shards.
  std::optional<PairLoader> loader;
  if (!rollouts_) {
    loader.emplace(run_.data.train, loader_options(true), run_.parallel.data_rank, run_.parallel.data_size,
                   run_.progress.cursor);
  }
  WindowStats window;
  int64_t skipped = run_.progress.scaler.skipped;
  catch_stop_signals();
  for (int64_t step = first; step < total; ++step) {
    const Timer step_timer;
    const StepBatch batch = rollouts_ ? rollouts_->step_batch(step, window.phases) : loader->next();
    if (!rollouts_) window.phases.data += step_timer.seconds();
    const double lr = learning_rate(config_.optim, step, total);
    const ScopedCollectiveContext collective_context(step + 1, -1);  // timeouts name the step
    const StepOutcome outcome = train_step(batch, lr, window);
    fault_pace_step(step + 1, step_timer.seconds());
    window.seconds += step_timer.seconds();
    skipped += outcome.skipped ? 1 : 0;
    result.steps = step + 1;
    run_.progress.step = result.steps;
    run_.progress.cursor = batch.global.next;
    mixture_seen_.resize(batch.mixture_counts.size(), 0);
    for (size_t k = 0; k < batch.mixture_counts.size(); ++k) mixture_seen_[k] += batch.mixture_counts[k];

    if (result.steps % config_.train.log_every == 0 || result.steps == total) {
      drain_device_into(window);
      TrainRecord record = log_window(window, outcome, batch, lr, result.steps, skipped);
      const std::vector<double> shares = mixture_shares();
      for (size_t k = 0; k < shares.size(); ++k) record.json["mix/" + run_.data.train->component_directory(k)] = shares[k];
      record.json["elapsed_s"] = run_timer.seconds();  // of this job (since its start or resume)
      result.last_train = record;
      if (observer.train_record) observer.train_record(record);
      emit(record.json);
    }
    const int64_t eval_every = config_.train.eval_every;
    if (evaluates() && eval_every > 0 && result.steps % eval_every == 0 && result.steps != total) {
      drain_device_into(window);
      result.last_eval = evaluate(result.steps);
      emit(result.last_eval->json);
    }
    if (observer.step_done) observer.step_done(result.steps, total, run_timer.seconds());

    result.stopped = maybe_checkpoint(result.steps, window);
    if (result.stopped != StopKind::none) {
      log0("train: stop requested (", enum_name(result.stopped), ") - checkpoint of step ", result.steps,
           " saved; continue with --resume auto");
      break;
    }
  }
  run_.checkpoints->finish();
  if (!mixture_seen_.empty()) {
    const std::vector<double> shares = mixture_shares();
    const double weights = std::accumulate(run_.data.train_weights.begin(), run_.data.train_weights.end(), 0.0);
    std::string line;
    for (size_t k = 0; k < shares.size(); ++k) {
      char text[64];
      std::snprintf(text, sizeof(text), " %.4f (weight %.4f)", shares[k], run_.data.train_weights[k] / weights);
      line += (k ? ", " : " ") + run_.data.train->component_directory(k) + text;
    }
    log0("train: data mixture over ", std::accumulate(mixture_seen_.begin(), mixture_seen_.end(), uint64_t{0}),
         " samples:", line);
  }
  if (result.stopped == StopKind::none) result.stopped = finish_run(result, emit);
  result.seconds = run_timer.seconds();
  return result;
}

StopKind Trainer::finish_run(TrainResult& result, const std::function<void(const nlohmann::ordered_json&)>& emit) {
  // The last step's checkpoint is saved: a stop request from here on skips what is left, which
  // `--resume auto` redoes (the export) or leaves out (the final eval).
  const auto stop_before = [&](const char* phase, const char* done, const char* left) {
    fault_signal_at(phase);
    const StopKind stop = agreed_stop_kind(*run_.host);
    if (stop != StopKind::none) {
      log0("train: stop requested (", enum_name(stop), ") after the checkpoint of the last step", done,
           "; ", left);
    }
    return stop;
  };
  const bool exporting = config_.ckpt.export_hf;
  if (evaluates()) {
    if (const StopKind stop = stop_before("eval", "", exporting ? "the final eval and the export are skipped; "
                                                                  "--resume auto writes the export"
                                                                : "the final eval is skipped");
        stop != StopKind::none) {
      return stop;
    }
    result.last_eval = evaluate(result.steps);
    emit(result.last_eval->json);
  }
  if (!exporting) return StopKind::none;
  if (const StopKind stop = stop_before("export", evaluates() ? " and the final eval" : "",
                                        "the export is skipped; --resume auto writes it");
      stop != StopKind::none) {
    return stop;
  }
  export_model();
  if (agreed_stop_kind(*run_.host) != StopKind::none) {
    log0("train: a stop was requested during the export; the export finished, the run is complete");
  }
  return StopKind::none;
}

bool Trainer::export_missing() {
  const bool missing = world_.rank() == 0 && config_.ckpt.export_hf &&
                       !std::filesystem::exists(std::filesystem::path(config_.train.output_dir) / "export");
  return max_over_ranks(*run_.host, missing ? 1.0 : 0.0) > 0.0;
}

}  // namespace st

#include "train/trainer.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "ckpt/checkpoint_reader.h"
#include "ckpt/hf_export.h"
#include "data/pair_loader.h"
#include "dist/mpi_communicator.h"
#include "dist/value_gather.h"
#include "fsdp/fsdp_engine.h"
#include "fsdp/sharding.h"
#include "optim/lr_schedule.h"
#include "train/flops.h"
#include "train/metrics_file.h"
#include "train/recompute_choice.h"
#include "train/reference.h"
#include "train/train_checkpoints.h"
#include "train/train_metrics.h"
#include "util/cpu_threads.h"
#include "util/device.h"
#include "util/errors.h"
#include "util/gpu_info.h"
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
// zero-weight padding batches), and the global pair and completion-token counts the
// summed losses are divided by.
struct StepShape {
  int64_t micro_batches = 0;
  double pairs = 0.0, target_tokens = 0.0;
};

StepShape agree_step_shape(Communicator& world, const std::vector<MicroBatch>& mine) {
  double pairs = 0.0, tokens = 0.0;
  for (const MicroBatch& micro : mine) {
    pairs += static_cast<double>(micro.pairs);
    tokens += static_cast<double>(micro.target_tokens);
  }
  const std::vector<double> all = all_gather_values(world, {static_cast<double>(mine.size()), pairs, tokens});
  StepShape shape;
  for (size_t rank = 0; rank < all.size() / 3; ++rank) {
    shape.micro_batches = std::max(shape.micro_batches, static_cast<int64_t>(all[3 * rank]));
    shape.pairs += all[3 * rank + 1];
    shape.target_tokens += all[3 * rank + 2];
  }
  return shape;
}

// Whether any rank was asked to stop (the signal may reach only some of them).
bool any_rank_stopping(Communicator& world) {
  return max_over_ranks(world, stop_requested() ? 1.0 : 0.0) > 0.0;
}

void add_comm(CommBytes& total, const CommBytes& step) {
  total.all_gather += step.all_gather;
  total.reduce_scatter += step.reduce_scatter;
  total.all_reduce += step.all_reduce;
}

}  // namespace

struct Trainer::State {
  TrainConfig config;
  World& world;
  Stage stage = Stage::dpo;
  PreferenceLossOptions loss_options;
  c10::Device device = at::kCPU;
  at::ScalarType compute_dtype = at::kFloat;
  std::unique_ptr<MpiCommunicator> host;  // small host-side agreements and metric reductions
  ShardingGroups groups;
  TrainData data;
  std::unique_ptr<FsdpEngine> engine;
  std::unique_ptr<ReferenceModel> reference;
  TrainPlan plan;
  double peak_tflops = 0.0;
  std::optional<std::string> resume_from;  // the checkpoint this run continues
  TrainProgress progress;                  // where training stands (restored on resume)
  std::unique_ptr<CheckpointWriter> checkpoints;

  State(const TrainConfig& c, World& w) : config(c), world(w) {}

  LoaderOptions loader_options(bool train) const {
    LoaderOptions options;
    options.global_batch = static_cast<uint64_t>(train ? plan.global_batch : config.train.micro_batch * world.size());
    options.seed = config.train.seed;
    options.shuffle = train && config.data.shuffle;
    options.collate.cutoff_len = config.data.cutoff_len;
    options.collate.pad_id = data.train->pad_id();
    options.collate.micro_batch = config.train.micro_batch;
    options.collate.max_tokens = config.data.micro_batch_tokens;
    options.collate.group_by_length = config.data.group_by_length;
    options.prefetch_steps = static_cast<size_t>(config.data.prefetch_steps);
    options.subset = train ? data.train_subset : data.val_subset;
    return options;
  }

  double reference_seconds = 0.0;  // the online reference's forwards since the step began

  // One batch of device inputs for the reference and the policy (host targets: no sync).
  MicroBatchResult run_micro_batch(const MicroBatch& micro) {
    const TokenBatch batch = engine->model().make_batch(micro.input_ids, micro.targets);
    at::Tensor reference_logps;
    if (plan.reference == ReferenceMode::precomputed) reference_logps = to_device_async(micro.ref_logps, device);
    if (plan.reference == ReferenceMode::online) {
      const Timer timer;
      reference_logps = reference->logps(batch);
      if (config.train.time_phases) compat::synchronize_compute(device);
      reference_seconds += timer.seconds();
    }
    const at::Tensor policy = engine->model().sequence_logps(batch);
    return micro_batch_loss(stage, micro, policy, reference_logps, loss_options);
  }

  const MicroBatch& micro_or_padding(const std::vector<MicroBatch>& mine, int64_t index) {
    if (index < static_cast<int64_t>(mine.size())) return mine[static_cast<size_t>(index)];
    if (!padding) {
      padding = std::make_unique<MicroBatch>(
          padding_micro_batch(stage, data.train->pad_id(), plan.reference == ReferenceMode::precomputed));
    }
    return *padding;
  }

  int cuda_device() const { return device.is_cuda() ? device.index() : -1; }

  void save_checkpoint() {
    progress.optimizer_steps = engine->optimizer().steps_taken();
    progress.scaler = engine->scaler().state();
    checkpoints->save(progress, engine_state(*engine), capture_rng_state(cuda_device()));
  }

  // <output_dir>/export from the in-memory masters (the same bytes the last checkpoint holds).
  void export_model() {
    HfExportOptions options;
    options.dtype = export_dtype(config.ckpt.export_dtype);
    options.max_shard_bytes = static_cast<uint64_t>(config.ckpt.export_shard_gb * 1e9);
    options.base_model_dir = config.model.path;
    options.replace = true;  // the run owns <output_dir>/export
    const std::string output = config.train.output_dir + "/export";
    FsdpModel& model = engine->model();
    const HfExportResult exported = export_hf_model(output, model.config(), model.units(), model.master_shards(),
                                                    shard_place(groups), *host, options);
    log0("export: ", output, " (", config.ckpt.export_dtype, ", ", exported.files, " file(s), ",
         static_cast<double>(exported.bytes) / 1e9, " GB) in ", exported.seconds, " s");
  }

  int64_t peak_memory_bytes() const {
    return device.is_cuda() ? compat::peak_gpu_memory_bytes(device.index()) : peak_resident_bytes();
  }

  nlohmann::ordered_json evaluate(int64_t step);

 private:
  std::unique_ptr<MicroBatch> padding;
};

Trainer::Trainer(const TrainConfig& config, World& world) : state_(std::make_unique<State>(config, world)) {
  State& s = *state_;
  const TrainOptions& t = config.train;
  s.stage = t.stage == "sft" ? Stage::sft : Stage::dpo;
  s.loss_options = {parse_preference_loss(config.dpo.loss), config.dpo.beta, config.dpo.label_smoothing,
                    config.dpo.simpo_gamma, config.dpo.ftx};
  s.device = select_device("auto", world.local_device());
  const int threads = cpu_threads_per_rank(world.topology().local_size);
  if (!s.device.is_cuda()) at::set_num_threads(threads);
  keep_freed_host_memory();  // per-step host buffers reuse freed pages instead of faulting in new ones
  s.host = std::make_unique<MpiCommunicator>(world.comm(), world.watchdog());
  s.resume_from = prepare_run_directory(config, *s.host);

  // A checkpoint of another model, then a wrong data directory, fail before any weights are read.
  const ModelConfig model = model_config_of(config.model.path, config.model.preset);
  std::optional<CheckpointManifest> manifest;
  if (s.resume_from) {
    manifest = read_checkpoint_manifest(*s.resume_from);
    check_checkpoint_model(*manifest, *s.resume_from, to_hf_config_json(model), build_unit_layouts(model, 1));
  }
  s.data = open_train_data(config, model.vocab_size);
  s.plan = plan_training(config, s.data, world.size(), s.device.is_cuda());
  s.compute_dtype = compute_scalar_type(s.plan.compute_dtype);
  s.progress.total_steps = s.plan.total_steps;
  s.progress.global_batch = s.plan.global_batch;

  s.groups = make_run_sharding_groups(config.dist, world);
  const int shard_rank = s.groups.shard->rank();
  const std::vector<UnitLayout> units = build_unit_layouts(model, s.groups.shard->size());
  const std::string source = model_source_description(config.model.path, config.model.preset, t.seed);
  if (s.resume_from) {
    if (manifest->progress.global_batch != s.plan.global_batch) {
      throw ConfigError("train.resume: checkpoint " + *s.resume_from + " was trained with a global batch of " +
                        std::to_string(manifest->progress.global_batch) + " pairs, this run has " +
                        std::to_string(s.plan.global_batch) + " (micro_batch x grad_accum x ranks); set "
                        "train.grad_accum or train.micro_batch so that they match");
    }
  }

  EngineOptions engine;
  engine.model = {s.compute_dtype, at::kFloat, s.device, config.model.logp_chunk_tokens};
  engine.optim = config.optim;
  engine.loss_scaling = s.compute_dtype == at::kHalf;
  engine.offload_threads = threads;
  engine.time_phases = t.time_phases;
  ModelShards shards{model, units, {}, source};
  if (!s.resume_from || s.plan.reference == ReferenceMode::online) {  // the base weights are needed
    shards = load_model_shards(config.model.path, config.model.preset, t.seed, s.groups.shard->size(), shard_rank);
  }
  if (s.plan.reference == ReferenceMode::online) {
    s.reference = std::make_unique<ReferenceModel>(shards, s.groups, engine.model);
  }
  if (s.resume_from) shards.masters = host_shard_state(units, false).master;  // the checkpoint fills them
  s.engine = std::make_unique<FsdpEngine>(std::move(shards), s.groups, engine);
  if (s.resume_from) {
    const LoadedCheckpoint loaded = resume_engine(*s.engine, *s.resume_from, shard_rank, *s.host);
    restore_rng_state(loaded.rng, s.cuda_device());
    s.progress = loaded.manifest.progress;
    if (s.progress.total_steps != s.plan.total_steps) {
      log0("train: the checkpoint's run had ", s.progress.total_steps, " steps, this one has ", s.plan.total_steps,
           "; the learning-rate schedule follows the new length");
      s.progress.total_steps = s.plan.total_steps;
    }
    log0("train: resumed from ", *s.resume_from, " at step ", s.progress.step, " (written by ",
         loaded.manifest.world_size, " rank(s), now ", world.size(), ")");
  }
  const int64_t compute_bytes = c10::elementSize(s.compute_dtype);
  const RecomputeChoice recompute = choose_recompute(
      config, model, s.groups.shard->size(), compute_bytes,
      device_budget_bytes(config, model, s.groups.shard->size(), compute_bytes, s.cuda_device()));
  s.engine->model().set_recompute(recompute.plan);
  log0("train: recompute ", recompute.reason);
  s.checkpoints = std::make_unique<CheckpointWriter>(checkpoint_directory(config), config.ckpt,
                                                     checkpoint_identity(config, model, units, source), *s.host,
                                                     shard_place(s.groups));

  s.peak_tflops = t.peak_tflops;
  if (s.peak_tflops == 0.0 && s.device.is_cuda()) {
    const GpuInfo gpu = query_gpu_info();
    if (s.device.index() < static_cast<int>(gpu.devices.size())) {
      s.peak_tflops = known_peak_tflops(gpu.devices[s.device.index()], s.plan.compute_dtype);
    }
  }
}

Trainer::~Trainer() = default;

const TrainPlan& Trainer::plan() const { return state_->plan; }

nlohmann::ordered_json Trainer::State::evaluate(int64_t step) {
  const Timer timer;
  c10::NoGradGuard no_grad;
  PairLoader loader(data.val, loader_options(false), world.rank(), world.size());
  WindowStats totals;  // its sums stay on the device until the one read at the end
  for (uint64_t batch = 0; batch < loader.steps_per_epoch(); ++batch) {
    const StepBatch step_batch = loader.next();
    const StepShape shape = agree_step_shape(*host, step_batch.micro_batches);
    for (int64_t index = 0; index < shape.micro_batches; ++index) {
      totals.add(run_micro_batch(micro_or_padding(step_batch.micro_batches, index)));
    }
  }
  totals.settle();
  return reduce_eval_record(*host, stage, totals.sums, step, timer.seconds());
}

TrainResult Trainer::run(const TrainObserver& observer) {
  State& s = *state_;
  const int64_t total = s.plan.total_steps;
  const bool writer = s.world.rank() == 0;
  std::unique_ptr<MetricsFile> metrics;
  const int64_t first = s.progress.step;
  if (first > 0 && first >= total) {  // e.g. the last job of a chain: the run ended before it
    log0("train: the run is already complete (its checkpoint is at step ", first, " of ", total,
         "); nothing to do");
    TrainResult done;
    done.first_step = done.steps = first;
    return done;
  }
  if (writer) {
    std::filesystem::create_directories(s.config.train.output_dir);
    const std::string path = s.config.train.output_dir + "/metrics.jsonl";
    if (first > 0) truncate_metrics_after(path, first);
    metrics = std::make_unique<MetricsFile>(path, /*append=*/first > 0);
  }
  TrainResult result;
  result.first_step = first;
  result.steps = first;
  const auto emit = [&](const nlohmann::ordered_json& record) {
    if (metrics) metrics->write(record);
    if (observer.record) observer.record(record);
  };

  const Timer run_timer;
  PairLoader loader(s.data.train, s.loader_options(true), s.world.rank(), s.world.size(), s.progress.cursor);
  const double dp = s.world.size();
  WindowStats window;
  int64_t skipped = s.progress.scaler.skipped;
  catch_stop_signals();
  for (int64_t step = first; step < total; ++step) {
    const Timer step_timer;
    const StepBatch batch = loader.next();
    window.phases.data += step_timer.seconds();
    const StepShape shape = agree_step_shape(*s.host, batch.micro_batches);
    const double denominator = s.stage == Stage::dpo ? shape.pairs : shape.target_tokens;
    // Summed losses x (micro-batches x ranks / global count): the engine's mean over micro-
    // batches and ranks then gives the exact mean over the step's pairs (tokens for SFT),
    // however unevenly they are spread.
    const double weight = static_cast<double>(shape.micro_batches) * dp / std::max(denominator, 1.0);
    const double lr = learning_rate(s.config.optim, step, total);
    const StepOutcome outcome = s.engine->step(
        shape.micro_batches,
        [&](FsdpModel&, int64_t index) {
          const MicroBatch& micro = s.micro_or_padding(batch.micro_batches, index);
          MicroBatchResult micro_result = s.run_micro_batch(micro);
          window.add(micro_result);
          window.flops += training_flops(s.engine->model().config(), micro.row_lengths,
                                         s.plan.reference == ReferenceMode::online);
          return micro_result.summed_loss * weight;
        },
        lr);
    window.steps += 1;
    window.seconds += step_timer.seconds();
    StepPhases phases = outcome.phases;  // the engine's forward includes the trainer's reference
    phases.reference = std::exchange(s.reference_seconds, 0.0);
    phases.forward -= phases.reference;
    window.phases += phases;
    add_comm(window.comm, outcome.comm);
    skipped += outcome.skipped ? 1 : 0;
    result.steps = step + 1;
    s.progress.step = result.steps;
    s.progress.cursor = batch.global.next;

    if (result.steps % s.config.train.log_every == 0 || result.steps == total) {
      RecordContext context;
      context.stage = s.stage;
      context.step = result.steps;
      context.epoch = static_cast<double>(batch.global.next.epoch) +
                      static_cast<double>(batch.global.next.consumed) / static_cast<double>(s.plan.train_pairs);
      context.lr = lr;
      context.grad_norm = outcome.read_grad_norm();  // with the window's sums: the one read
      context.skipped_steps = skipped;
      context.peak_tflops = s.peak_tflops;
      context.peak_memory_bytes = s.peak_memory_bytes();
      context.memory_kind = s.device.is_cuda() ? "gpu" : "host_rss";
      context.exact_phases = !s.device.is_cuda() || s.config.train.time_phases;
      window.settle();
      result.last_train = reduce_train_record(*s.host, window, context);
      emit(result.last_train);
      window = {};
    }
    const int64_t eval_every = s.config.train.eval_every;
    if (s.data.val && eval_every > 0 && result.steps % eval_every == 0 && result.steps != total) {
      result.last_eval = s.evaluate(result.steps);
      emit(result.last_eval);
    }
    if (observer.step_done) observer.step_done(result.steps, total, run_timer.seconds());

    s.checkpoints->poll();
    result.preempted = any_rank_stopping(*s.host);
    const int64_t every = s.config.ckpt.every;
    const bool at_end = result.steps == total && s.config.ckpt.save_at_end;
    if ((every > 0 && result.steps % every == 0) || result.preempted || at_end) s.save_checkpoint();
    if (result.preempted) {
      log0("train: stop requested (SIGUSR1/SIGTERM) - checkpoint of step ", result.steps,
           " saved; continue with --resume auto");
      break;
    }
  }
  s.checkpoints->finish();
  if (result.preempted) {
    result.seconds = run_timer.seconds();
    return result;
  }
  if (s.data.val) {
    result.last_eval = s.evaluate(result.steps);
    emit(result.last_eval);
  }
  if (s.config.ckpt.export_hf) s.export_model();
  result.seconds = run_timer.seconds();
  return result;
}

}  // namespace st

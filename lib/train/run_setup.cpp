#include "train/run_setup.h"

#include <ATen/Parallel.h>

#include <algorithm>

#include "ckpt/checkpoint_reader.h"
#include "fsdp/unit_layout.h"
#include "train/flops.h"
#include "train/objective.h"
#include "train/recompute_choice.h"
#include "train/stop_request.h"
#include "train/train_checkpoints.h"
#include "util/blas_kernels.h"
#include "util/build_info.h"
#include "util/cpu_threads.h"
#include "util/device.h"
#include "util/errors.h"
#include "util/gpu_info.h"
#include "util/host_memory.h"
#include "util/log.h"
#include "util/rng_state.h"

namespace st {
namespace {

// Only a global batch the user fixed (train.global_batch) can differ from the checkpoint's: the
// plan keeps the checkpoint's otherwise.
void check_resume_batch(const CheckpointManifest& manifest, const std::string& checkpoint, const TrainPlan& plan) {
  if (manifest.progress.global_batch == plan.global_batch) return;
  throw ConfigError("train.resume: checkpoint " + checkpoint + " was trained with a global batch of " +
                    std::to_string(manifest.progress.global_batch) + " pairs, and train.global_batch asks " +
                    std::to_string(plan.global_batch) + "; set train.global_batch = 0 to keep the checkpoint's on " +
                    "any rank count (a resumed run continues with the batch it started with)");
}

// How train.grad_accum was resolved, when it is not what the config says: auto, or a resumed
// run that keeps its checkpoint's global batch on another rank count (validate_config makes a
// fresh run's given grad_accum the plan's).
void log_accumulation(const TrainOptions& t, const TrainPlan& plan, const ParallelLayout& parallel,
                      const ConfigOrigins& origins) {
  if (t.grad_accum == plan.grad_accum) return;
  const std::string geometry = "global batch " + std::to_string(plan.global_batch) + " = " +
                               std::to_string(t.micro_batch) + " x " + std::to_string(plan.grad_accum) + " x " +
                               std::to_string(parallel.data_size) +
                               (parallel.context_size > 1 ? " data-parallel ranks" : " ranks");
  if (t.grad_accum == 0) {
    log0("train: grad_accum auto -> ", plan.grad_accum, " (", geometry, ")");
    return;
  }
  const auto origin = origins.find("train.grad_accum");
  log0("train: grad_accum ", t.grad_accum, origin != origins.end() ? " (" + origin->second + ")" : std::string(),
       " -> ", plan.grad_accum, " keeps the checkpoint's ", geometry);
}

double peak_tflops_of(const TrainConfig& config, const c10::Device& device, ComputeDtype dtype) {
  if (config.train.peak_tflops > 0.0 || !device.is_cuda()) return config.train.peak_tflops;
  const GpuInfo gpu = query_gpu_info();
  if (device.index() >= static_cast<int>(gpu.devices.size())) return 0.0;
  return known_peak_tflops(gpu.devices[device.index()], dtype);
}

// What the engine trains: every weight's units, or (train.method = lora) the adapters'.
std::vector<UnitLayout> trained_unit_layouts(const TrainConfig& config, const ModelConfig& model, int group_size) {
  if (model.hybrid() && config.dist.context_parallel > 1) {
    throw ConfigError("dist.context_parallel = " + std::to_string(config.dist.context_parallel) + " on a hybrid model (" +
                      enum_name(model.model_type) + "): its Gated DeltaNet layers' recurrent state would have to pass "
                      "between the ranks that split a row, which is not built; set dist.context_parallel = 1");
  }
  const int64_t multiple = shard_multiple_of(config.optim.name);
  if (!trains_adapters(config.train.method)) return build_unit_layouts(model, group_size, multiple);
  if (config.train.method == TrainMethod::qlora && model.experts.shared_intermediate_size > 0) {
    // bitsandbytes holds the shared expert's nn.Linear projections (and its gate) in 4 bits too;
    // only the adapted projections are built as NF4 blocks here.
    throw ConfigError(std::string("train.method = qlora on ") + enum_name(model.model_type) +
                      ": its shared expert's projections would be 4-bit as bitsandbytes holds them, which is not "
                      "built; use train.method = lora");
  }
  const std::vector<LoraTarget> targets = lora_targets(config.lora.target_modules);
  if (held_lora_targets(model, targets).empty()) {  // as PEFT refuses a list none of whose modules exist
    throw ConfigError("lora.target_modules = " + config.lora.target_modules + ": this " + enum_name(model.model_type) +
                      " model has none of these projections; choose from the ones it has (" +
                      lora_target_words(model_lora_targets(model)) + ")");
  }
  const bool experts = lora_adapts_routed_experts(model) &&
                       std::find(targets.begin(), targets.end(), LoraTarget::gate) != targets.end();
  if (experts && config.lora.dropout > 0.0) {  // as PEFT refuses lora_dropout with target_parameters
    throw ConfigError("lora.dropout > 0: the experts' adapters (gate, up, down on a mixture-of-experts model) take "
                      "no dropout, as in PEFT (target_parameters); set lora.dropout = 0 or leave gate, up and down out "
                      "of lora.target_modules");
  }
  if (experts && config.lora.rslora) {  // PEFT's fused gate_up (rank 2 r, alpha 2 alpha) scales otherwise there
    throw ConfigError("lora.rslora = true with the experts adapted (gate, up, down on a mixture-of-experts model) is "
                      "not built: PEFT scales their fused gate_up pair by 2 alpha / sqrt(2 r); set lora.rslora = false "
                      "or leave gate, up and down out of lora.target_modules");
  }
  return build_adapter_unit_layouts(model, targets, config.lora.r, group_size, multiple);
}

void log_adapters(const TrainConfig& config, const FsdpModel& model, ComputeDtype dtype) {
  int64_t trained = 0, frozen = 0;
  for (const UnitLayout& unit : model.units()) trained += unit.numel;
  for (const ParamSpec& spec : all_params(model.config())) frozen += spec.numel();
  const std::string held = config.train.method == TrainMethod::qlora
                               ? std::string(enum_name(config.lora.quant_type)) +
                                     (config.lora.double_quant ? " with 8-bit absmax" : "") + ", the rest in " +
                                     enum_name(dtype)
                               : enum_name(dtype);
  log0("train: ", config.train.method == TrainMethod::qlora ? "QLoRA" : "LoRA", " r ", config.lora.r, ", alpha ",
       config.lora.alpha, config.lora.rslora ? " (rslora)" : "", " on ", config.lora.target_modules, ": ", trained,
       " trainable parameters (", 100.0 * static_cast<double>(trained) / static_cast<double>(frozen), "% of the ",
       frozen, " frozen in ", held, ")");
}

// What the optimizer's state costs here, so a switch to adamw8bit shows its saving.
void log_optimizer(const OptimOptions& optim, FsdpEngine& engine) {
  int64_t owned = 0;
  for (const at::Tensor& master : engine.model().master_shards()) owned += master.numel();
  const double bytes = static_cast<double>(engine.optimizer().state_bytes());
  log0("train: optimizer ", enum_name(optim.name), ", moments ", bytes / (1024.0 * 1024.0), " MiB on rank 0 (",
       owned > 0 ? bytes / static_cast<double>(owned) : 0.0, " bytes per owned parameter)",
       optim.offload == Offload::cpu ? " in host memory" : "");
}

}  // namespace

RunSetup setup_run(const TrainConfig& config, World& world, const RunOptions& options) {
  RunSetup run;
  const TrainOptions& t = config.train;
  run.device = select_device(DeviceChoice::automatic, world.local_device());
  const int threads = cpu_threads_per_rank(world.topology().local_size);
  if (!run.device.is_cuda()) {
    use_cpu_threads(threads);
    const std::string note = blas_kernel_note();
    if (!note.empty()) log0("train: ", note);
  }
  keep_freed_host_memory();  // per-step host buffers reuse freed pages instead of faulting in new ones
  run.host = std::make_unique<MpiCommunicator>(world.comm(), world.watchdog());
  run.parallel = parallel_layout(world.rank(), world.size(), config.dist.context_parallel);
  run.resume_from = prepare_run_directory(config, *run.host);

  // A wrong data directory, then a checkpoint of another model, fail before any weights are read.
  const ModelConfig base = model_config_of(config.model.path, config.model.preset);
  if (base.multimodal_text) {
    const MultimodalWrapper* wrapper = multimodal_wrapper_of(base.model_type);
    const bool keeps = wrapper != nullptr && wrapper->export_keeps_layout;
    log0("train: ", config.model.path, " is an image-text model: training its language model (config.json text_config, ",
         enum_name(base.model_type), "); the vision tower and projector are left out",
         keeps ? " and copied into an export as they are (with every other tensor it holds)" : ", and an export is the text model");
  }
  run.data = open_train_data(config, base.vocab_size);
  const ModelConfig model = trained_model_config(config, base, run.data.train->pad_id());
  std::optional<CheckpointManifest> manifest;
  if (run.resume_from) {
    manifest = read_checkpoint_manifest(*run.resume_from);
    check_checkpoint_model(*manifest, *run.resume_from, to_hf_config_json(model),
                           trained_unit_layouts(config, model, 1), adapter_identity(config));
  }
  run.plan = plan_training(config, run.data, run.parallel.data_size, run.device.is_cuda(),
                           manifest ? manifest->progress.global_batch : 0, run.parallel.context_size);
  log_accumulation(t, run.plan, run.parallel, options.origins);
  const at::ScalarType compute_dtype = compute_scalar_type(run.plan.compute_dtype);
  if (run.plan.reference == ReferenceMode::precomputed) {
    check_reference_provenance(run.data, model_fingerprint(config.model.path, config.model.preset, t.seed),
                               model_source_description(config.model.path, config.model.preset, t.seed),
                               enum_name(run.plan.compute_dtype));
  }
  run.progress.total_steps = run.plan.total_steps;
  run.progress.global_batch = run.plan.global_batch;
  if (manifest) check_resume_batch(*manifest, *run.resume_from, run.plan);
  stop_if_requested_during(*run.host, "data");

  run.groups = std::make_unique<ShardingGroups>(make_run_sharding_groups(config.dist, world));
  log0("train: sharding ", enum_name(config.dist.sharding), ": ", describe_sharding_groups(config.dist, world));
  if (run.parallel.context_size > 1) {
    log0("train: context parallel: each row split over ", run.parallel.context_size, " consecutive ranks (",
         run.parallel.data_size, " data-parallel groups)");
  }
  const int shard_rank = run.groups->shard->rank();
  const int shard_size = run.groups->shard->size();
  const std::vector<UnitLayout> units = trained_unit_layouts(config, model, shard_size);
  const int64_t shard_multiple = shard_multiple_of(config.optim.name);
  const bool adapters = trains_adapters(t.method);
  const std::string source = model_source_description(config.model.path, config.model.preset, t.seed);

  EngineOptions engine;
  const at::ScalarType reduce_dtype = t.reduce_dtype == ReduceDtype::bf16 ? at::kBFloat16 : at::kFloat;
  engine.model = {compute_dtype, reduce_dtype, run.device, config.model.logp_chunk_tokens, config.model.attention,
                  t.compute_copy};
  engine.optim = config.optim;
  engine.loss_scaling = compute_dtype == at::kHalf;
  engine.offload_threads = threads;
  engine.sync_phases = options.sync_phases;
  if (adapters) engine.model.adapter = {lora_scale(config.lora), config.lora.dropout, static_cast<int64_t>(config.lora.seed)};
  ModelShards shards;
  shards.config = model;
  shards.units = units;
  shards.description = source;
  const bool online_reference = run.plan.reference == ReferenceMode::online;
  if (t.method == TrainMethod::qlora) {  // read and quantized a unit at a time
    shards = qlora_model_shards(model, config.model.path, config.model.preset, t.seed, config.lora, compute_dtype,
                                run.device, *run.groups->shard, shard_multiple);
  } else if (!run.resume_from || online_reference || adapters) {  // the base weights are needed
    shards = load_model_shards(model, config.model.path, config.model.preset, t.seed, shard_size, shard_rank,
                               adapters ? 1 : shard_multiple);
  }
  stop_if_requested_during(*run.host, "model");
  if (t.method == TrainMethod::lora) {
    shards = adapter_model_shards(std::move(shards), config.lora, compute_dtype, run.device, shard_rank, shard_multiple);
  } else if (online_reference && !adapters) {
    run.reference = std::make_unique<ReferenceModel>(shards, *run.groups, engine.model);
  }
  stop_if_requested_during(*run.host, "reference");
  if (run.resume_from) shards.masters = host_shard_state(units, false).of(StateKind::master);  // the checkpoint fills them
  run.engine = std::make_unique<FsdpEngine>(std::move(shards), *run.groups, engine);
  // The base with the adapters off is the reference: no second copy.
  if (adapters && online_reference) run.reference = std::make_unique<ReferenceModel>(run.engine->model());
  if (adapters) log_adapters(config, run.engine->model(), run.plan.compute_dtype);
  log_optimizer(config.optim, *run.engine);
  if (run.resume_from) {
    const LoadedCheckpoint loaded = resume_engine(*run.engine, *run.resume_from, shard_rank, *run.host);
    restore_rng_state(loaded.rng, cuda_device_index(run.device));
    run.progress = loaded.manifest.progress;
    if (run.progress.total_steps != run.plan.total_steps) {
      log0("train: the checkpoint's run had ", run.progress.total_steps, " steps, this one has ",
           run.plan.total_steps, "; the learning-rate schedule follows the new length");
      run.progress.total_steps = run.plan.total_steps;
    }
    log0("train: resumed from ", *run.resume_from, " at step ", run.progress.step, " (written by ",
         loaded.manifest.world_size, " rank(s), now ", world.size(), ")");
  }
  const int64_t compute_bytes = c10::elementSize(compute_dtype);
  const int cuda_device = cuda_device_index(run.device);
  // Model states are in place: the token budget, then recompute, size to what is left.
  TrainConfig sized = config;
  sized.data.micro_batch_tokens = run.micro_batch_tokens =
      fit_micro_batch_tokens(config, model, shard_size, compute_bytes, device_available_bytes(config, cuda_device));
  if (config.data.micro_batch_tokens == kAutoMicroBatchTokens) {
    log0("train: data.micro_batch_tokens auto -> ", run.micro_batch_tokens, " tokens per micro-batch");
  }
  const RecomputeChoice recompute = choose_recompute(
      sized, model, shard_size, compute_bytes, device_budget_bytes(sized, model, shard_size, compute_bytes, cuda_device));
  run.engine->model().set_recompute(recompute.plan);
  stop_if_requested_during(*run.host, "checkpoint");
  log0("train: recompute ", recompute.reason);
  run.checkpoints = std::make_unique<CheckpointWriter>(checkpoint_directory(config), config.ckpt,
                                                       checkpoint_identity(config, model, units, source), *run.host,
                                                       shard_place(*run.groups));
  run.peak_tflops = peak_tflops_of(config, run.device, run.plan.compute_dtype);
  return run;
}

}  // namespace st

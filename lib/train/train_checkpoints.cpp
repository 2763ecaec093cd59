#include "train/train_checkpoints.h"

#include <nlohmann/json.hpp>

#include <ctime>
#include <filesystem>
#include <fstream>

#include "ckpt/checkpoint_directory.h"
#include "distributed/string_gather.h"
#include "fsdp/shard_source.h"
#include "model/nf4.h"
#include "ckpt/checkpoint_manifest.h"
#include "train/run_identity.h"
#include "train/train_arguments.h"
#include "util/dynamic_quant.h"
#include "util/errors.h"
#include "util/file_io.h"
#include "util/log.h"

namespace st {
namespace {

namespace fs = std::filesystem;

// Fails before any training when checkpoints could not be written.
void require_writable(const std::string& directory) {
  const fs::path probe = fs::path(directory) / ".write_test";
  try {
    fs::create_directories(directory);
    write_file_atomically(probe.string(), "shardtune\n");
    fs::remove(probe);
  } catch (const std::exception& error) {
    throw IoError("ckpt.dir = " + directory + " is not writable (" + error.what() + "); choose a writable "
                  "ckpt.dir or train.output_dir");
  }
}

std::string utc_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof(text), "%Y%m%dT%H%M%SZ", &parts);
  return text;
}

void set_aside_later_timeline(const TrainConfig& config, const std::string& resume) {
  const std::string directory = checkpoint_directory(config);
  const std::optional<int64_t> step = checkpoint_step(resume);
  if (!step) return;
  const SetAside aside = set_aside_newer_checkpoints(directory, *step, utc_stamp());
  if (aside.folder.empty()) return;
  const fs::path exported = fs::path(config.train.output_dir) / "export";
  std::string export_note;
  if (fs::exists(exported)) {
    fs::rename(exported, fs::path(aside.folder) / "export");
    export_note = " and the export made from them";
  }
  std::string names;
  for (const std::string& name : aside.moved) names += (names.empty() ? "" : ", ") + name;
  log0("checkpoint: resuming from step ", *step, " while newer checkpoints exist: moved ", names, export_note,
       " to ", aside.folder, " (that timeline is abandoned; --resume auto continues from step ", *step, ")");
}

// Rank 0's decision: "resume:<checkpoint>" or "fresh:" (prepare_run_directory sends it to all).
std::string decide_on_rank0(const TrainConfig& config) {
  const std::string directory = checkpoint_directory(config);
  require_writable(directory);
  const int removed = remove_incomplete_checkpoints(directory);
  if (removed > 0) log0("checkpoint: removed ", removed, " interrupted save(s) (step_*.tmp) in ", directory);
  const std::optional<std::string> resume = resolve_resume(config.train.resume, directory);
  if (resume && config.train.resume == kResumeNewest) {  // auto continues the same run only
    const std::vector<std::string> changed = changed_run_keys(read_checkpoint_manifest(*resume).config, config);
    if (!changed.empty()) {
      std::string list;
      for (const std::string& line : changed) list += "\n  - " + line;
      throw ConfigError("train.output_dir = " + config.train.output_dir + " holds a run of another config, which " +
                        "--resume auto does not continue:" + list + "\nTrain this config in a new train.output_dir, " +
                        "continue that run with its own config (--config " + config.train.output_dir +
                        "/config.resolved.ini), or replace it (without --resume auto, with --train.overwrite=true)");
    }
  }
  if (resume) return "resume:" + *resume;
  const bool has_metrics = fs::exists(fs::path(config.train.output_dir) / "metrics.jsonl");
  const bool has_checkpoints = !list_complete_checkpoints(directory).empty();
  if ((has_metrics || has_checkpoints) && !config.train.overwrite && config.train.resume != kResumeNewest) {
    throw ConfigError("train.output_dir = " + config.train.output_dir + " already holds a run (" +
                      (has_checkpoints ? "checkpoints in " + directory : std::string("metrics.jsonl")) +
                      "); continue it with --resume auto, choose a new train.output_dir, or pass "
                      "--train.overwrite=true to replace its outputs");
  }
  if (has_checkpoints) {
    log0("checkpoint: starting fresh; removing the earlier run's checkpoints in ", directory);
    remove_all_checkpoints(directory);
  }
  return "fresh:";
}

}  // namespace

std::string checkpoint_directory(const TrainConfig& config) {
  return config.ckpt.dir.empty() ? (fs::path(config.train.output_dir) / "checkpoints").string() : config.ckpt.dir;
}

std::optional<std::string> prepare_run_directory(const TrainConfig& config, Communicator& world) {
  std::string decision;
  if (world.rank() == 0) {
    try {
      decision = decide_on_rank0(config);
    } catch (const ConfigError& error) {
      decision = std::string("config-error:") + error.what();
    } catch (const Error& error) {
      decision = std::string("error:") + error.what();
    }
  }
  decision = all_gather_strings(world, decision).at(0);
  const auto rest = [&](const char* prefix) { return decision.substr(std::string(prefix).size()); };
  if (decision.rfind("config-error:", 0) == 0) throw ConfigError(rest("config-error:"));
  if (decision.rfind("error:", 0) == 0) throw CheckpointError(rest("error:"));
  if (decision.rfind("resume:", 0) == 0) return rest("resume:");
  return std::nullopt;
}

void abandon_later_timeline(const TrainConfig& config, const std::string& resume_from, Communicator& world) {
  if (config.train.resume == kResumeNewest) return;  // auto resumes the newest: nothing is later
  if (world.rank() == 0) set_aside_later_timeline(config, resume_from);
  world.barrier();
}

ShardPlace shard_place(ShardingGroups& groups) {
  return {groups.shard->rank(), groups.shard->size(), !groups.replica || groups.replica->rank() == 0};
}

nlohmann::json adapter_identity(const TrainConfig& config) {
  if (!trains_adapters(config.train.method)) return nullptr;
  const LoraOptions& lora = config.lora;
  const std::string targets = lora_target_words(lora_targets(lora.target_modules));
  const ModelOptions& base = config.model;
  nlohmann::json identity = {{"method", enum_name(config.train.method)},
          {"r", lora.r},
          {"alpha", lora.alpha},
          {"rslora", lora.rslora},
          {"dropout", lora.dropout},
          {"target_modules", targets},
          {"base_fingerprint", model_fingerprint(base.path, base.preset, config.train.seed)},
          {"base", {{"path", base.path}, {"preset", base.preset}, {"seed", config.train.seed}}}};
  // The adapters were trained against this quantization of that base.
  if (config.train.method == TrainMethod::qlora) {
    identity["quantization"] = {{"quant_type", enum_name(lora.quant_type)},
                                {"block_size", kNf4BlockSize},
                                {"double_quant", lora.double_quant}};
  }
  return identity;
}

CheckpointIdentity checkpoint_identity(const TrainConfig& config, const ModelConfig& model,
                                       const std::vector<UnitLayout>& units, const std::string& model_source) {
  return {to_hf_config_json(model), model_source,          units, format_resolved_config(config),
          adapter_identity(config),  config.optim.name};
}

namespace {

// The engine's AdamW moments as `optimizer` keeps them (views, no copies).
ShardState moment_state(ShardedAdamW& optimizer) {
  ShardState state;
  if (optimizer.name() == OptimizerName::adamw) {
    state.of(StateKind::exp_avg) = optimizer.exp_avg();
    state.of(StateKind::exp_avg_sq) = optimizer.exp_avg_sq();
    return state;
  }
  for (const Moments8bit& moments : optimizer.moments8bit()) {
    state.of(StateKind::exp_avg_code).push_back(moments.m_codes);
    state.of(StateKind::exp_avg_absmax).push_back(moments.m_absmax);
    state.of(StateKind::exp_avg_sq_code).push_back(moments.v_codes);
    state.of(StateKind::exp_avg_sq_absmax).push_back(moments.v_absmax);
  }
  return state;
}

// A checkpoint of the other optimizer: its moments, read as `read` holds them, into the
// engine's (adamw -> adamw8bit codes them blockwise; adamw8bit -> adamw decodes them).
void convert_moments(const ShardState& read, ShardedAdamW& optimizer, const std::vector<UnitLayout>& units, int shard) {
  if (optimizer.name() == OptimizerName::adamw8bit) {
    std::vector<Moments8bit>& coded = optimizer.moments8bit();
    for (size_t u = 0; u < coded.size(); ++u) {
      const Moments8bit host = Moments8bit::quantize(read.of(StateKind::exp_avg)[u], read.of(StateKind::exp_avg_sq)[u]);
      for (auto [to, from] : {std::pair{&coded[u].m_codes, &host.m_codes}, {&coded[u].m_absmax, &host.m_absmax},
                              {&coded[u].v_codes, &host.v_codes}, {&coded[u].v_absmax, &host.v_absmax}}) {
        to->copy_(*from);
      }
    }
    return;
  }
  for (size_t u = 0; u < optimizer.exp_avg().size(); ++u) {
    // The absmax read covers the blocks the shard overlaps, the first possibly begun before it.
    const int64_t into_block = units[u].shard_offset(shard) % kDynamicBlockSize;
    optimizer.exp_avg()[u].copy_(dequantize_dynamic(read.of(StateKind::exp_avg_code)[u],
                                                    read.of(StateKind::exp_avg_absmax)[u], DynamicMap::signed_values,
                                                    into_block));
    optimizer.exp_avg_sq()[u].copy_(dequantize_dynamic(read.of(StateKind::exp_avg_sq_code)[u],
                                                       read.of(StateKind::exp_avg_sq_absmax)[u],
                                                       DynamicMap::unsigned_values, into_block));
  }
}

}  // namespace

ShardState engine_state(FsdpEngine& engine) {
  ShardState state = moment_state(engine.optimizer());
  state.of(StateKind::master) = engine.model().master_shards();
  return state;
}

LoadedCheckpoint resume_engine(FsdpEngine& engine, const std::string& directory, int shard, Communicator& world) {
  const OptimizerName written_by = read_checkpoint_manifest(directory).optimizer;
  ShardedAdamW& optimizer = engine.optimizer();
  const std::vector<UnitLayout>& units = engine.model().units();
  LoadedCheckpoint loaded;
  if (written_by == optimizer.name()) {
    loaded = load_checkpoint(directory, units, shard, world, engine_state(engine));
  } else {
    ShardState read = host_shard_state(units, /*with_moments=*/true, written_by, shard);
    read.of(StateKind::master) = engine.model().master_shards();
    loaded = load_checkpoint(directory, units, shard, world, read);
    convert_moments(read, optimizer, units, shard);
    log0("train: checkpoint ", directory, " holds ", enum_name(written_by), " moments; resumed as ",
         enum_name(optimizer.name()), written_by == OptimizerName::adamw ? " (coded blockwise in 8 bits)" : " (decoded)");
  }
  engine.model().refresh_compute_shards();
  optimizer.set_steps_taken(loaded.manifest.progress.optimizer_steps);
  engine.scaler().restore(loaded.manifest.progress.scaler);
  return loaded;
}

void truncate_metrics_after(const std::string& path, int64_t step) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_discarded()) continue;  // a line cut short by the crash
    if (record.value("step", int64_t{0}) > step) continue;
    kept += line + "\n";
  }
  write_file_atomically(path, kept);
}

}  // namespace st

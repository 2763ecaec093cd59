// `shardtune export`: a sharded checkpoint -> a consolidated Hugging Face model directory that
// transformers and vLLM load. Any number of ranks: each reads its slice of every unit from the
// rank files (resharded) and writes it into the safetensors files in place (lib/ckpt/hf_export.h).
// A LoRA checkpoint becomes a PEFT adapter directory, or with --merge the base model with the
// adapters folded in (the base re-read from where the run read it, its fingerprint checked).
#include <boost/program_options.hpp>
#include <filesystem>

#include "ckpt/checkpoint_directory.h"
#include "ckpt/checkpoint_model.h"
#include "ckpt/checkpoint_reader.h"
#include "ckpt/hf_export.h"
#include "ckpt/peft_export.h"
#include "command_runner.h"
#include "commands.h"
#include "config/command_options.h"
#include "distributed/mpi_communicator.h"
#include "distributed/value_gather.h"
#include "distributed/world.h"
#include "exit_codes.h"
#include "fsdp/adapter_merge.h"
#include "fsdp/shard_source.h"
#include "util/errors.h"
#include "util/host_memory.h"
#include "util/log.h"
#include "util/timer.h"

namespace st {
namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;

struct ExportCommand {
  std::string checkpoint, output;
  ExportDtype dtype = ExportDtype::bf16;
  double shard_gb = 5.0;
  bool overwrite = false;
  bool merge = false;
};

po::options_description export_options(ExportCommand& o) {
  po::options_description options("shardtune export --checkpoint DIR --output HF_DIR", 110, 50);
  options.add_options()
      ("help", "print this help and exit")
      ("checkpoint", po::value(&o.checkpoint), "a step_* checkpoint, or a checkpoint directory (its newest complete one)")
      ("output", po::value(&o.output), "Hugging Face model directory to write")
      ("dtype", enum_flag(&o.dtype, "export", "dtype"), "dtype of the exported weights: bf16|fp32")
      ("shard-gb", po::value(&o.shard_gb)->default_value(5.0), "size limit of one safetensors file [GB]")
      ("overwrite", po::bool_switch(&o.overwrite), "replace an existing --output directory")
      ("merge", po::bool_switch(&o.merge),
       "LoRA and QLoRA checkpoints: write the base model with the adapters merged in (default: the PEFT adapter "
       "directory)");
  return options;
}

// The base a LoRA checkpoint adapts, as this rank's fp32 shards, after checking it is the one
// the adapters were trained on.
// `config`: the trained model's (a reward model's score head where the base has none).
ModelShards adapted_base(const CheckpointManifest& manifest, const ModelConfig& config, const std::string& directory,
                         int shards, int shard) {
  const AdapterBase base = checked_adapter_base(manifest, directory, "export --merge", "export the adapter alone (no --merge)");
  return load_model_shards(config, base.path, base.preset, base.seed, shards, shard);
}

}  // namespace

int run_export(std::vector<std::string> args, int& argc, char**& argv) {
  World world(argc, argv);
  return run_guarded([&] {
    ExportCommand o;
    if (!parse_command_options("export", args, export_options(o), world.rank())) return kExitOk;
    if (o.checkpoint.empty() || o.output.empty()) throw ConfigError("export: --checkpoint and --output are required");
    if (o.shard_gb <= 0.0) throw ConfigError("export: --shard-gb must be > 0");
    HfExportOptions options;
    options.dtype = export_scalar_type(o.dtype);
    options.max_shard_bytes = static_cast<uint64_t>(o.shard_gb * 1e9);
    options.replace = o.overwrite;
    if (fs::exists(o.output) && !o.overwrite) {
      throw ConfigError("export: --output " + o.output + " exists; pass --overwrite to replace it or choose another");
    }
    const std::string directory = resolve_resume(o.checkpoint, o.checkpoint).value();
    const Timer timer;
    reset_peak_resident();
    MpiCommunicator communicator(world.comm(), world.watchdog());
    const CheckpointManifest manifest = read_checkpoint_manifest(directory);
    const ModelConfig config = parse_model_config(manifest.model_config, directory + "/manifest.json");
    const bool adapters = !manifest.adapter.is_null();
    if (o.merge && !adapters) throw ConfigError("export: --merge applies to LoRA checkpoints; " + directory + " holds every weight");
    const std::vector<UnitLayout> units =
        adapters ? build_adapter_unit_layouts(config, lora_targets(manifest.adapter.value("target_modules", "")),
                                              manifest.adapter.value("r", int64_t{0}), world.size())
                 : build_unit_layouts(config, world.size());
    const ShardState masters = host_shard_state(units, /*with_moments=*/false);
    load_checkpoint(directory, units, world.rank(), communicator, masters);
    if (fs::is_directory(manifest.model_source)) options.base_model_dir = manifest.model_source;
    if (adapters && !o.merge) {
      const PeftExportResult adapter = export_peft_adapter(o.output, config, units, masters.of(StateKind::master), world.rank(), true,
                                                           communicator, manifest.adapter, options.dtype, o.overwrite);
      log0("export: step ", manifest.progress.step, " of ", directory, " -> ", o.output, " (PEFT LoRA adapter, ",
           adapter.tensors, " tensors, ", static_cast<double>(adapter.bytes) / 1e6, " MB) in ", timer.seconds(), " s");
      return kExitOk;
    }
    std::vector<UnitLayout> written_units = units;
    std::vector<at::Tensor> written = masters.of(StateKind::master);
    if (adapters) {
      ModelShards base = adapted_base(manifest, config, directory, world.size(), world.rank());
      const TensorMap whole = gather_adapters(units, masters.of(StateKind::master), world.rank(), true, communicator);
      merge_adapters_into_shards(config, base.units, base.masters, world.rank(), whole, checkpoint_adapter_scale(manifest));
      if (manifest.adapter.contains("quantization")) {
        log0("export: QLoRA adapters merged onto the full-precision base ", base.description,
             ", not onto the NF4-dequantized weights they were trained against (docs/lora.md, \"QLoRA\")");
      }
      written_units = base.units;
      written = base.masters;
    }
    const HfExportResult result = export_hf_model(o.output, config, written_units, written,
                                                  {world.rank(), world.size(), true}, communicator, options);
    const double peak = max_over_ranks(communicator, static_cast<double>(peak_resident_bytes()));
    const double seconds = timer.seconds();
    log0("export: step ", manifest.progress.step, " of ", directory, " -> ", o.output, " (", enum_name(o.dtype), ", ",
         result.files, " file(s), ", static_cast<double>(result.bytes) / 1e9, " GB) on ", world.size(), " rank(s) in ",
         seconds, " s (", static_cast<double>(result.bytes) / 1e9 / seconds, " GB/s); peak RSS per rank ",
         peak / 1e9, " GB (max over ranks), fp32 model ", static_cast<double>(result.bytes) /
         static_cast<double>(at::elementSize(options.dtype)) * 4.0 / 1e9, " GB");
    return kExitOk;
  });
}

}  // namespace st

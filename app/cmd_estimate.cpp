// `shardtune estimate`: memory per GPU and per host for a run before any job is submitted
// (lib/fsdp/memory_estimate.h). The run is described by the train keys themselves (--config
// run.ini and --section.key=value, the same names and checks as `shardtune train`); only the
// job's shape is estimate's own. Runs without MPI.
#include <boost/program_options.hpp>
#include <iostream>

#include "cluster_shape.h"
#include "command_runner.h"
#include "commands.h"
#include "config/command_options.h"
#include "exit_codes.h"
#include "fsdp/shard_source.h"
#include "memory_report.h"
#include "train/train_arguments.h"
#include "train/train_config_validate.h"
#include "train/train_plan.h"
#include "util/errors.h"

namespace st {
namespace {

namespace po = boost::program_options;

// --device: where the ranks train.
enum class EstimateDevice { gpu, cpu };

}  // namespace

template <>
struct EnumNames<EstimateDevice> {
  static constexpr NamedValue<EstimateDevice> table[] = {{EstimateDevice::gpu, "gpu"}, {EstimateDevice::cpu, "cpu"}};
};

int run_estimate(std::vector<std::string> args, int&, char**&) {
  return run_guarded([&] {
    int64_t nodes = 0, ranks_per_node = 0;  // the older spelling of --world, still read
    std::string world = "1x8";
    double gpu_gib = 80.0;
    EstimateDevice device = EstimateDevice::gpu;
    po::options_description own("estimate options: the job's shape (the run itself is the train keys below)", 110, 55);
    own.add_options()
        ("world", po::value(&world)->default_value(world),
         "the cluster: NODESxRANKS_PER_NODE, one rank per GPU (as train --dry-run --world)")
        ("nodes", po::value(&nodes), "the older spelling: --nodes N --ranks-per-node R = --world NxR")
        ("ranks-per-node", po::value(&ranks_per_node), "(with --nodes)")
        ("device", enum_flag(&device, "estimate", "device"), "gpu | cpu (CPU training: everything in host memory)")
        ("gpu-memory", po::value(&gpu_gib)->default_value(gpu_gib),
         "GPU memory [GiB] to check the fit against (and for recompute = auto when train.memory_budget_gib is 0)");
    const ConfigArguments parsed = parse_config_arguments(args, own);
    if (parsed.help) {
      std::cout << config_help("usage: shardtune estimate [--config run.ini|run.yaml] [--section.key=value ...] "
                               "[--world NODESxGPUS]\n"
                               "e.g. shardtune estimate --model.preset llama-3.1-8b --data.cutoff_len 2048 --world 2x8",
                               own);
      return kExitOk;
    }
    const ClusterShape shape = parse_world_shape(world, "estimate");
    if (parsed.command_values.count("nodes") || parsed.command_values.count("ranks-per-node")) {  // the older spelling
      if (parsed.command_values.count("world") && !parsed.command_values["world"].defaulted()) {
        throw ConfigError("estimate: give the cluster once: --world NxR, or --nodes N --ranks-per-node R");
      }
      if (!parsed.command_values.count("nodes")) nodes = 1;
      if (!parsed.command_values.count("ranks-per-node")) ranks_per_node = 8;
    } else {
      nodes = shape.nodes;
      ranks_per_node = shape.ranks_per_node;
    }
    if (nodes < 1 || ranks_per_node < 1 || gpu_gib <= 0.0) {
      throw ConfigError("estimate: --world needs >= 1 node and rank per node, --gpu-memory > 0");
    }
    TrainConfig config = parsed.config;
    validate_config(config, static_cast<int>(nodes * ranks_per_node), parsed.origins);
    const bool on_gpu = device == EstimateDevice::gpu;
    if (config.train.memory_budget_gib == 0.0 && on_gpu) config.train.memory_budget_gib = gpu_gib;
    const ModelConfig model = model_config_of(config.model.path, config.model.preset);
    const EstimatePlan plan = estimate_plan(model, config, nodes, ranks_per_node, on_gpu);
    const std::string name = config.model.path.empty() ? "preset " + config.model.preset : config.model.path;
    std::cout << plan.token_budget
              << format_memory_report(model, name, plan.inputs, estimate_memory(model, plan.inputs), gpu_gib);
    return kExitOk;
  });
}

}  // namespace st

#include "train_dry_run.h"

#include <algorithm>
#include <iostream>
#include <sstream>

#include "cluster_shape.h"
#include "distributed/backend.h"
#include "distributed/env_check.h"
#include "distributed/mpi_communicator.h"
#include "distributed/parallel_layout.h"
#include "fsdp/shard_source.h"
#include "fsdp/unit_layout.h"
#include "memory_report.h"
#include "optim/optim_options.h"
#include "train/prepped_data.h"
#include "train/train_arguments.h"
#include "train/train_config_validate.h"
#include "train/train_plan.h"
#include "util/device.h"
#include "util/errors.h"
#include "util/log.h"

namespace st {
namespace {

}  // namespace

void train_dry_run(const ConfigArguments& parsed, World& world, const std::string& world_shape) {
  TrainConfig config = parsed.config;
  ClusterShape shape;
  if (!world_shape.empty()) {
    shape = parse_world_shape(world_shape, "train");
  } else {
    shape.nodes = world.topology().node_count;
    shape.ranks_per_node = world.size() / shape.nodes;
    shape.on_gpu = select_device(DeviceChoice::automatic, world.local_device()).is_cuda();
  }
  const int ranks = shape.nodes * shape.ranks_per_node;
  validate_config(config, ranks, parsed.origins);
  if (world_shape.empty()) {
    world.watchdog().set_timeout(config.dist.timeout_s);
    MpiCommunicator communicator(world.comm(), world.watchdog());
    enforce_consistent_env(communicator, local_env_fingerprint(world));
    make_communicator(world.comm(), config.dist.backend, world.local_device(), world.watchdog())->barrier();
  }
  {  // the data the run would prep, prepped (and kept for it): the plan counts its pairs
    MpiCommunicator communicator(world.comm(), world.watchdog());
    for (const std::string& line : prep_config_data(config, communicator)) log0(line);
  }
  const ModelConfig model = model_config_of(config.model.path, config.model.preset);
  const TrainData data = open_train_data(config, model.vocab_size);
  const ParallelLayout parallel = parallel_layout(0, ranks, config.dist.context_parallel);
  const TrainPlan plan = plan_training(config, data, parallel.data_size, shape.on_gpu, 0, parallel.context_size);

  const EstimatePlan sizing = estimate_plan(model, config, shape.nodes, shape.ranks_per_node, shape.on_gpu);
  const EstimateInputs& in = sizing.inputs;
  const std::string& token_budget = sizing.token_budget;
  const MemoryEstimate estimate = estimate_memory(model, in);
  const auto units = build_unit_layouts(model, static_cast<int>(estimate.shard_group));
  // The experts units as the engine will lay them out: trained with the optimizer's blocks, or a
  // QLoRA base's unquantized values in whole 16-element rows (quantized_base.h).
  const int64_t multiple = config.train.method == TrainMethod::full    ? shard_multiple_of(config.optim.name)
                           : config.train.method == TrainMethod::qlora ? 16
                                                                       : 1;
  check_expert_split_geometry(model, build_unit_layouts(model, static_cast<int>(estimate.shard_group), multiple),
                              config.dist.expert_parallel);
  int64_t smallest = units.front().shard_numel, largest = 0;
  for (const UnitLayout& unit : units) {
    smallest = std::min(smallest, unit.shard_numel);
    largest = std::max(largest, unit.shard_numel);
  }

  const std::string resolved = config.train.output_dir + "/config.resolved.ini";
  if (world.rank() == 0) {
    write_resolved_config(config, parsed.origins, resolved);
    std::ostringstream out;
    out << "dry run: configuration valid for " << ranks << " ranks (" << shape.nodes << " node(s) x "
        << shape.ranks_per_node << ")" << (world_shape.empty() ? "; all ranks of this job run identical software" : "")
        << "\n"
        << "stage " << describe_objective(config, plan.reference) << "; compute " << enum_name(plan.compute_dtype) << (shape.on_gpu ? " on GPUs" : " on CPUs") << "\n"
        << "data: " << plan.train_pairs << " training pairs, " << plan.val_pairs << " validation pairs\n"
        << "batch: global " << plan.global_batch << " = micro " << config.train.micro_batch << " x accum "
        << plan.grad_accum << " x " << parallel.data_size
        << (parallel.context_size > 1 ? " data-parallel groups of " + std::to_string(parallel.context_size) +
                                            " context-parallel ranks"
                                      : std::string(" ranks"))
        << "; " << plan.steps_per_epoch << " steps per epoch, "
        << plan.total_steps << " steps in all\n"
        << "shard plan: " << units.size() << " units over a shard group of " << estimate.shard_group << " ranks; "
        << smallest << " .. " << largest << " elements per rank and unit\n"
        << format_memory_report(model, config.model.path.empty() ? "preset " + config.model.preset : config.model.path,
                                in, estimate, 0.0)
        << token_budget
        << (in.recompute == Recompute::automatic && shape.on_gpu && in.device_bytes == 0
                ? "recompute auto: the plan above assumes no memory limit; a run decides at start from the GPU's "
                  "free memory (or set train.memory_budget_gib)\n"
                : "")
        << "resolved config written to " << resolved << "\n";
    std::cout << out.str() << std::flush;
  }
}

}  // namespace st

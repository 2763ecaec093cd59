// `shardtune precompute-ref --config run.ini`: the reference model's log-probs of every pair of
// the run's training (and validation) data, written into the shards, so DPO runs with
// dpo.reference = precomputed (or auto) skip the reference forward. Takes the run's own config:
// the model, data, cutoff_len, micro_batch, dtype and sharding of the training run.
#include <ATen/Parallel.h>

#include <iostream>

#include "command_runner.h"
#include "commands.h"
#include "distributed/mpi_communicator.h"
#include "distributed/world.h"
#include "exit_codes.h"
#include "fsdp/shard_source.h"
#include "rank_device.h"
#include "train/objective.h"
#include "train/recompute_choice.h"
#include "train/reference_precompute.h"
#include "train/train_arguments.h"
#include "train/train_config_validate.h"
#include "train/train_plan.h"
#include "util/device.h"
#include "util/errors.h"
#include "util/host_memory.h"
#include "util/log.h"
#include "util/timer.h"

namespace st {

int run_precompute_ref(std::vector<std::string> args, int& argc, char**& argv) {
  World world(argc, argv);
  return run_guarded([&] {
    po::options_description own("precompute-ref options", 110, 55);
    const ConfigArguments parsed = parse_config_arguments(args, own);
    if (parsed.help) {
      if (world.rank() == 0) {
        std::cout << config_help("usage: shardtune precompute-ref --config run.ini [--section.key=value ...]\n"
                                 "Scores data.train (and data.val) under the model of [model] and writes "
                                 "ref_chosen_logp / ref_rejected_logp into the shards.",
                                 own);
      }
      return kExitOk;
    }
    TrainConfig config = parsed.config;
    validate_config(config, 0, parsed.origins);  // the training run may use another rank count
    // Each rank scores its own pairs whole: the training run's context groups do not apply to
    // this forward-only pass.
    config.dist.context_parallel = 1;
    check_objective_config(config);
    if (!objective_for(config.train.stage).needs_reference(config)) {
      throw ConfigError("precompute-ref: " + objective_for(config.train.stage).describe(config, "none") +
                        " reads no reference log-probs; they are for an objective that has a reference (dpo: a "
                        "dpo.loss other than simpo or orpo)");
    }
    world.watchdog().set_timeout(config.dist.timeout_s);
    const Timer timer;
    const ModelConfig model = model_config_of(config.model.path, config.model.preset);
    const TrainData data = open_train_data(config, model.vocab_size);  // validates before any scoring

    const c10::Device device = select_rank_device(DeviceChoice::automatic, world);
    keep_freed_host_memory();
    const ComputeDtype dtype = resolve_compute_dtype(config.train.dtype, device.is_cuda());
    ShardingGroups groups = make_run_sharding_groups(config.dist, world);
    const ModelShards shards = load_model_shards(config.model.path, config.model.preset, config.train.seed,
                                                 groups.shard->size(), groups.shard->rank());
    ReferenceModel reference(shards, groups,
                             {compute_scalar_type(dtype), at::kFloat, device, config.model.logp_chunk_tokens,
                              config.model.attention});

    CollateOptions collate = collate_options(config, data.train->pad_id());
    const int64_t compute_bytes = c10::elementSize(compute_scalar_type(dtype));
    collate.max_tokens = fit_micro_batch_tokens(config, model, groups.shard->size(), compute_bytes,
                                                device_available_bytes(config, cuda_device_index(device)));
    const ReferenceInfo info{config.model.path.empty() ? shards.description : config.model.path, config.data.cutoff_len,
                             enum_name(dtype),
                             model_fingerprint(config.model.path, config.model.preset, config.train.seed)};
    MpiCommunicator host(world.comm(), world.watchdog());
    std::vector<std::string> directories;  // every dataset of a mixture
    for (const PairDataset* dataset : {data.train.get(), config.data.val.empty() ? nullptr : data.val.get()}) {
      for (size_t k = 0; dataset && k < dataset->components(); ++k) directories.push_back(dataset->component_directory(k));
    }
    for (const std::string& directory : directories) {
      const uint64_t pairs = precompute_reference(directory, objective_for(config.train.stage).example_kind(), reference,
                                                  collate, device, info, host);
      log0("precompute-ref: ", pairs, " pairs of ", directory, " scored with ", info.model, " (", enum_name(dtype),
           ", cutoff_len ", config.data.cutoff_len, ", ", world.size(), " rank(s)); reference log-probs written");
    }
    log0("precompute-ref: done in ", timer.seconds(), " s; train with dpo.reference = precomputed (or auto)");
    return kExitOk;
  });
}

}  // namespace st

// `shardtune train`: config -> validation -> startup consistency check -> resolved config in
// the run directory. The training loop itself is not in this build yet; --dry-run stops here.
#include <iostream>

#include "command_runner.h"
#include "commands.h"
#include "config/config_parser.h"
#include "config/config_validate.h"
#include "config/config_writer.h"
#include "dist/backend.h"
#include "dist/env_check.h"
#include "dist/mpi_communicator.h"
#include "dist/world.h"
#include "exit_codes.h"
#include "util/errors.h"
#include "util/log.h"

namespace st {

int run_train(std::vector<std::string> args, int& argc, char**& argv) {
  World world(argc, argv);
  return run_guarded([&] {
    po::options_description own("train options", 110, 55);
    own.add_options()("dry-run",
                      "parse and validate the config, check all ranks match, write the resolved "
                      "config, then stop");
    const ConfigArguments parsed = parse_config_arguments(args, own);
    if (parsed.help) {
      if (world.rank() == 0) {
        std::cout << config_help("usage: shardtune train --config run.ini [--section.key=value ...]",
                                 own);
      }
      return kExitOk;
    }
    if (!parsed.command_values.count("dry-run")) {
      throw ConfigError(
          "train: this build has no training loop yet; only --dry-run (validate the config and "
          "the ranks) is available. Rerun with --dry-run.");
    }
    const TrainConfig& config = parsed.config;
    validate_config(config, world.size(), parsed.origins);
    world.watchdog().set_timeout(config.dist.timeout_s);

    MpiCommunicator communicator(world.comm(), world.watchdog());
    enforce_consistent_env(communicator, local_env_fingerprint(world));
    const auto collectives = make_communicator(world.comm(), config.dist.backend,
                                               world.local_device(), world.watchdog());
    const std::string resolved = config.train.output_dir + "/config.resolved.ini";
    if (world.rank() == 0) write_resolved_config(config, resolved);
    collectives->barrier();
    log0("dry run: configuration valid for ", world.size(), " ranks on ",
         world.topology().node_count, " node(s); all ranks run identical software; collectives "
         "backend ", collectives->backend(), "; resolved config written to ", resolved);
    return kExitOk;
  });
}

}  // namespace st

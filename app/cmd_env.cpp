// `shardtune env`: every rank's host, GPU and software versions side by side; exits 3 when
// ranks differ. The same check runs (and aborts) at the start of `train`.
#include <boost/program_options.hpp>
#include <iostream>

#include "command_runner.h"
#include "commands.h"
#include "distributed/env_check.h"
#include "distributed/mpi_communicator.h"
#include "distributed/world.h"
#include "exit_codes.h"
#include "util/errors.h"

namespace st {

int run_env(std::vector<std::string> args, int& argc, char**& argv) {
  World world(argc, argv);
  return run_guarded([&] {
    namespace po = boost::program_options;
    po::options_description options("shardtune env [options]");
    options.add_options()("help", "print this help and exit");
    po::variables_map values;
    try {
      po::store(po::command_line_parser(args).options(options).run(), values);
    } catch (const po::error& error) {
      throw ConfigError(std::string("command line: ") + error.what());
    }
    if (values.count("help")) {
      if (world.rank() == 0) std::cout << options;
      return kExitOk;
    }
    MpiCommunicator communicator(world.comm(), world.watchdog());
    const auto fingerprints = gather_env_fingerprints(communicator, local_env_fingerprint(world));
    if (world.rank() == 0) {
      const Topology& topology = world.topology();
      std::cout << "shardtune env: " << world.size() << " rank" << (world.size() > 1 ? "s" : "")
                << " on " << topology.node_count << " node" << (topology.node_count > 1 ? "s" : "")
                << "\n"
                << format_env_table(fingerprints) << std::flush;
    }
    return find_env_mismatches(fingerprints).empty() ? kExitOk : kExitEnvMismatch;
  });
}

}  // namespace st

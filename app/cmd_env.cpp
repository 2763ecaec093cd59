// `shardtune env`: every rank's host, GPU and software versions side by side; exits 3 when
// ranks differ. The same check runs (and aborts) at the start of `train`. With --bench it then
// times collectives inside and across hosts and names the slowest host (link_bench.h).
#include <boost/program_options.hpp>
#include <iostream>
#include <map>

#include "command_runner.h"
#include "commands.h"
#include "config/command_options.h"
#include "distributed/env_check.h"
#include "distributed/link_bench.h"
#include "distributed/mpi_communicator.h"
#include "distributed/world.h"
#include "exit_codes.h"
#include "fsdp/unit_layout.h"
#include "hf/presets.h"
#include "util/errors.h"

namespace st {
namespace {

// "2 hosts x 2 ranks" or, uneven, "3 hosts: st-n1 x2, st-n2 x1, st-n3 x1".
std::string describe_hosts(const World& world) {
  std::vector<std::string> order;
  std::map<std::string, int> ranks;
  for (const auto& host : world.hostnames()) {
    if (!ranks.count(host)) order.push_back(host);
    ++ranks[host];
  }
  const int hosts = static_cast<int>(order.size());
  const bool even = std::all_of(order.begin(), order.end(), [&](const auto& h) { return ranks[h] == ranks[order[0]]; });
  std::string text = std::to_string(hosts) + (hosts > 1 ? " hosts" : " host");
  if (even) return text + " x " + std::to_string(ranks[order[0]]) + (ranks[order[0]] > 1 ? " ranks" : " rank");
  text += ":";
  for (const auto& host : order) text += " " + host + " x" + std::to_string(ranks[host]) + (host == order.back() ? "" : ",");
  return text;
}

// Bytes of the largest decoder-layer unit of `preset` in bf16: what FSDP gathers per unit.
int64_t unit_bytes(const std::string& preset) {
  int64_t largest = 0;
  for (const UnitLayout& unit : build_unit_layouts(preset_config(preset), 1)) largest = std::max(largest, unit.numel);
  return largest * 2;
}

}  // namespace

int run_env(std::vector<std::string> args, int& argc, char**& argv) {
  World world(argc, argv);
  return run_guarded([&] {
    namespace po = boost::program_options;
    po::options_description options("shardtune env [options]");
    bool bench = false;
    std::string bench_preset = "llama-3.2-1b";
    double bench_mib = 0;
    LinkBenchOptions link;
    options.add_options()
        ("help", "print this help and exit")
        ("bench", po::bool_switch(&bench), "then time all-gather and reduce-scatter inside and across hosts and name the slowest host")
        ("bench-preset", po::value(&bench_preset)->default_value(bench_preset), "--bench moves one FSDP unit of this model (bf16)")
        ("bench-mib", po::value(&bench_mib)->default_value(0), "--bench buffer size in MiB instead (0 = the preset's unit)")
        ("bench-repeats", po::value(&link.repeats)->default_value(link.repeats), "--bench timed runs per collective (median)");
    if (!parse_command_options("env", args, options, world.rank())) return kExitOk;
    if (link.repeats < 1 || bench_mib < 0) throw ConfigError("env: --bench-repeats must be >= 1 and --bench-mib >= 0");
    MpiCommunicator communicator(world.comm(), world.watchdog());
    const auto fingerprints = gather_env_fingerprints(communicator, local_env_fingerprint(world));
    if (world.rank() == 0) {
      const Topology& topology = world.topology();
      std::cout << "shardtune env: " << world.size() << " rank" << (world.size() > 1 ? "s" : "")
                << " on " << topology.node_count << " node" << (topology.node_count > 1 ? "s" : "")
                << " (" << describe_hosts(world) << ")\n"
                << format_env_table(fingerprints) << std::flush;
    }
    if (!find_env_mismatches(fingerprints).empty()) return kExitEnvMismatch;
    if (bench) {
      link.bytes = bench_mib > 0 ? static_cast<int64_t>(bench_mib * (1 << 20)) : unit_bytes(bench_preset);
      const LinkBenchReport report = bench_links(world, link);
      if (world.rank() == 0) std::cout << format_link_report(report) << std::flush;
    }
    return kExitOk;
  });
}

}  // namespace st

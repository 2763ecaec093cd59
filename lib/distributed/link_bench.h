// `shardtune env --bench`: all-gather and reduce-scatter bandwidth inside each host and across
// hosts, and how fast each host sends to the others, so that a slow link, NIC or switch port
// shows up as one named host before a multi-node run crawls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "distributed/world.h"

namespace st {

struct LinkBenchOptions {
  int64_t bytes = 64 << 20;  // per collective: the gathered buffer (an FSDP unit)
  int repeats = 3;           // timed runs of each; the median counts
};

struct HostLinks {
  std::string host;
  int ranks = 0;
  double gather_gbs = 0, scatter_gbs = 0;  // inside the host (0 with one rank)
  double send_gbs = 0;                     // broadcast from this host to the others (0 with one host)
};

struct LinkBenchReport {
  int64_t bytes = 0;
  int repeats = 0;
  std::vector<HostLinks> hosts;            // by node index
  double across_gather_gbs = 0, across_scatter_gbs = 0;  // one rank per host
};

// Collective over the world. Bandwidths are bytes of the whole buffer / median time [GB/s].
LinkBenchReport bench_links(World& world, const LinkBenchOptions& options);
// The table, then "slowest host: <name> (...)" when there are several hosts.
std::string format_link_report(const LinkBenchReport& report);
// The host whose sends are slowest; -1 with fewer than two hosts.
int slowest_host(const LinkBenchReport& report);

}  // namespace st
